<?php

declare(strict_types=1);

namespace Displace\Infer\Tests\Support;

use Displace\Infer\Tests\DefaultModel;

/**
 * PHP's built-in web server (`php -S`) on a free loopback port, serving one
 * script with the extension loaded and INFER_MODEL set; stop() ends it.
 */
final class BuiltInServer
{
    /** @var resource|null */
    private $process;
    public readonly int $port;

    /** @param array<string, string> $ini more php.ini settings (-d) */
    public function __construct(string $script, string $modelPath, array $ini = [])
    {
        $settings = [];
        foreach ($ini as $name => $value) {
            array_push($settings, '-d', "$name=$value");
        }
        $probe = stream_socket_server('tcp://127.0.0.1:0');
        $this->port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
        fclose($probe);
        $this->process = proc_open(
            array_merge([PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension()], $settings, ['-S', "127.0.0.1:{$this->port}", $script]),
            [1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']],
            $pipes,
            null,
            ['INFER_MODEL' => $modelPath],
        );
    }

    /**
     * GET / with $query, retried while the server starts (up to 20 s): the
     * body and the response headers, or null when it never answered.
     *
     * @param array<string, scalar> $query
     * @return array{string, list<string>}|null
     */
    public function get(array $query): ?array
    {
        $deadline = microtime(true) + 20;
        do {
            $body = @file_get_contents("http://127.0.0.1:{$this->port}/?" . http_build_query($query));
            if ($body !== false) {
                return [$body, $http_response_header];
            }
            usleep(100000);
        } while (microtime(true) < $deadline);
        return null;
    }

    public function stop(): void
    {
        if (is_resource($this->process)) {
            proc_terminate($this->process);
            proc_close($this->process);
        }
        $this->process = null;
    }

    public function __destruct()
    {
        $this->stop();
    }
}
