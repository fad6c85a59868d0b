<?php

declare(strict_types=1);

namespace Displace\Infer\Tests\Support;

use Displace\Infer\Tests\{DefaultModel, EmbeddingModel};

require_once __DIR__ . '/EmbeddingModel.php';

/**
 * Apache with the event MPM and the thread-safe PHP module
 * (scripts/apache-zts.sh): one child process whose threads each serve a PHP
 * request, on a free loopback port, serving tests-php/support/. Requests go
 * through get() and getMany() (many at once, each on its own connection).
 */
final class Apache
{
    public readonly int $port;
    public readonly string $dir;
    private bool $running = false;
    /** The process that started it: a forked copy must not stop it. */
    private readonly int $owner;

    /**
     * @param array<string, string> $ini php.ini settings of the server
     * @param array<string, string> $env more INFER_* variables its scripts see
     */
    public function __construct(public readonly int $threads, array $ini = [], array $env = [])
    {
        $this->owner = getmypid();
        $probe = stream_socket_server('tcp://127.0.0.1:0');
        $this->port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
        fclose($probe);
        $root = dirname(__DIR__, 2);
        $this->dir = "$root/target/apache-zts/{$this->port}";
        $lines = '';
        foreach ($ini as $name => $value) {
            $lines .= "$name=$value\n";
        }
        $env += [
            'INFER_MODEL' => (string) getenv('INFER_MODEL') ?: DefaultModel::path(),
            'INFER_EMBEDDING_MODEL' => EmbeddingModel::path(),
            'INFER_EXTENSION' => DefaultModel::extension(),
            'INFER_APACHE_INI' => $lines,
        ];
        $cmd = ['bash', "$root/scripts/apache-zts.sh", 'start', (string) $this->port, __DIR__, (string) $threads];
        [$code, $out] = self::run($cmd, $env);
        if ($code !== 0) {
            throw new \RuntimeException("apache-zts.sh start failed ($code): $out");
        }
        $this->running = true;
    }

    /**
     * Run $cmd with $env added to this process's environment.
     *
     * @param list<string> $cmd
     * @param array<string, string> $env
     * @return array{int, string}
     */
    private static function run(array $cmd, array $env = []): array
    {
        $process = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes, null, $env + getenv());
        $out = (string) stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        return [proc_close($process), $out];
    }

    /** VmRSS of $pid in KiB (0 when it is gone). */
    public static function rss(int $pid): int
    {
        preg_match('/^VmRSS:\s+(\d+) kB/m', (string) @file_get_contents("/proc/$pid/status"), $m);
        return (int) ($m[1] ?? 0);
    }

    /** How many threads $pid runs. */
    public static function threadCount(int $pid): int
    {
        preg_match('/^Threads:\s+(\d+)/m', (string) @file_get_contents("/proc/$pid/status"), $m);
        return (int) ($m[1] ?? 0);
    }

    /**
     * GET apache-worker.php with $query.
     *
     * @param array<string, scalar> $query
     * @return array{status: int, body: string, json: mixed, first: float, done: float}
     */
    public function get(array $query, float $timeout = 120.0): array
    {
        return $this->getMany([$query], $timeout)[0];
    }

    /**
     * GET apache-worker.php with each of $queries, all at once (one
     * connection each); the answers in the order of $queries, each with
     * when its first byte and its end arrived (microtime).
     *
     * @param list<array<string, scalar>> $queries
     * @return list<array{status: int, body: string, json: mixed, first: float, done: float}>
     */
    public function getMany(array $queries, float $timeout = 120.0, string $script = 'apache-worker.php'): array
    {
        $sockets = [];
        $raw = [];
        $first = [];
        $done = [];
        foreach ($queries as $i => $query) {
            $socket = @stream_socket_client("tcp://127.0.0.1:{$this->port}", $errno, $error, 10);
            if ($socket === false) {
                throw new \RuntimeException("cannot connect to Apache on {$this->port}: $error");
            }
            fwrite($socket, "GET /$script?" . http_build_query($query) . " HTTP/1.0\r\nHost: localhost\r\n\r\n");
            stream_set_blocking($socket, false);
            $sockets[$i] = $socket;
            $raw[$i] = '';
        }
        $deadline = microtime(true) + $timeout;
        while ($sockets !== [] && microtime(true) < $deadline) {
            $read = array_values($sockets);
            $write = $except = null;
            if (stream_select($read, $write, $except, 0, 200000) === false) {
                break;
            }
            foreach ($read as $socket) {
                $i = array_search($socket, $sockets, true);
                $chunk = fread($socket, 65536);
                if ($chunk !== false && $chunk !== '') {
                    $first[$i] ??= microtime(true);
                    $raw[$i] .= $chunk;
                }
                if (feof($socket)) {
                    $done[$i] = microtime(true);
                    fclose($socket);
                    unset($sockets[$i]);
                }
            }
        }
        foreach ($sockets as $socket) {
            fclose($socket);
        }
        $answers = [];
        foreach ($queries as $i => $query) {
            [$head, $body] = explode("\r\n\r\n", $raw[$i], 2) + ['', ''];
            preg_match('#^HTTP/\S+ (\d+)#', $head, $m);
            $answers[] = [
                'status' => (int) ($m[1] ?? 0),
                'body' => $body,
                'json' => json_decode($body, true),
                'first' => $first[$i] ?? 0.0,
                'done' => $done[$i] ?? 0.0,
            ];
        }
        return $answers;
    }

    public function graceful(): void
    {
        [$code, $out] = self::run(['bash', dirname(__DIR__, 2) . '/scripts/apache-zts.sh', 'graceful', (string) $this->port]);
        if ($code !== 0) {
            throw new \RuntimeException("apache-zts.sh graceful failed ($code): $out");
        }
    }

    /** Apache's and PHP's error log. */
    public function errorLog(): string
    {
        return (string) @file_get_contents("{$this->dir}/error.log");
    }

    public function stop(): void
    {
        if ($this->running && getmypid() === $this->owner) {
            self::run(['bash', dirname(__DIR__, 2) . '/scripts/apache-zts.sh', 'stop', (string) $this->port]);
            $this->running = false;
        }
    }

    public function __destruct()
    {
        $this->stop();
    }
}
