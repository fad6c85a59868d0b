<?php

declare(strict_types=1);

namespace Displace\Infer\Tests\Support;

/**
 * llama.cpp's llama-server (built by scripts/build-llama-server.sh from the
 * llama.cpp the extension links) on a free loopback port; stop() ends it.
 * Flash attention is off, as in every context the extension creates, so
 * greedy replies match the extension's token for token.
 */
final class LlamaServer
{
    /** @var resource|null */
    private $process;
    public readonly int $port;
    public readonly string $url;
    private string $log;

    /** @param list<string> $args more llama-server arguments */
    public function __construct(string $modelPath, array $args = [])
    {
        $binary = self::binary();
        $this->port = free_port();
        $this->url = "http://127.0.0.1:{$this->port}";
        $this->log = tempnam(sys_get_temp_dir(), 'llama-server-log-');
        $this->process = proc_open(
            array_merge([$binary, '-m', $modelPath, '--host', '127.0.0.1', '--port', (string) $this->port,
                '-fa', 'off', '-t', '2'], $args),
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', $this->log, 'w'], 2 => ['file', $this->log, 'w']],
            $pipes,
        );
        $deadline = microtime(true) + 60;
        while (microtime(true) < $deadline) {
            $status = proc_get_status($this->process);
            if (!$status['running']) {
                throw new \RuntimeException("llama-server exited:\n" . file_get_contents($this->log));
            }
            $health = @file_get_contents("{$this->url}/health");
            if ($health !== false && str_contains($health, 'ok')) {
                return;
            }
            usleep(100000);
        }
        $this->stop();
        throw new \RuntimeException("llama-server did not come up in 60 s:\n" . file_get_contents($this->log));
    }

    public static function binary(): string
    {
        $binary = getenv('INFER_LLAMA_SERVER') ?: __DIR__ . '/../../target/llama-server/bin/llama-server';
        if (!is_executable($binary)) {
            throw new \RuntimeException("llama-server not found at $binary: run scripts/build-llama-server.sh (make llama-server)");
        }
        return $binary;
    }

    /** Kill it at once (SIGKILL), as a crash would. */
    public function kill(): void
    {
        if (is_resource($this->process)) {
            proc_terminate($this->process, 9);
            proc_close($this->process);
        }
        $this->process = null;
    }

    public function stop(): void
    {
        if (is_resource($this->process)) {
            proc_terminate($this->process);
            proc_close($this->process);
        }
        $this->process = null;
        if (is_file($this->log)) {
            unlink($this->log);
        }
    }

    public function __destruct()
    {
        $this->stop();
    }
}

/** A loopback port nothing listens on (at the time of asking). */
function free_port(): int
{
    $probe = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
    fclose($probe);
    return $port;
}
