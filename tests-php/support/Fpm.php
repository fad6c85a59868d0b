<?php

declare(strict_types=1);

namespace Displace\Infer\Tests\Support;

use Displace\Infer\Tests\DefaultModel;

require_once __DIR__ . '/fcgi.php';

/**
 * A PHP-FPM pool started for a test or a benchmark: static workers on a free
 * loopback port, the extension loaded, INFER_MODEL passed on. Requests go
 * through fcgi_get(); stop() ends it and removes its files.
 */
final class Fpm
{
    /** @var resource|null */
    private $process = null;
    public readonly string $dir;
    public readonly int $port;
    /** The process that started the pool: a forked client must not stop it. */
    private readonly int $owner;

    /**
     * @param array<string, string> $ini extra php.ini settings (-d)
     * @param array<string, string> $pool the pool's php_admin_value settings (applied in each worker)
     */
    public function __construct(int $workers, string $modelPath, array $ini = [], array $pool = [])
    {
        $binary = self::binary();
        if ($binary === null) {
            throw new \RuntimeException('no php-fpm for PHP ' . PHP_VERSION . ' beside ' . PHP_BINARY . ' nor under /usr/sbin or /usr/local/sbin (make deps installs it)');
        }
        $this->owner = getmypid();
        $this->dir = sys_get_temp_dir() . '/infer-fpm-' . getmypid() . '-' . bin2hex(random_bytes(4));
        mkdir($this->dir);
        $probe = stream_socket_server('tcp://127.0.0.1:0');
        $this->port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
        fclose($probe);
        $admin = '';
        foreach ($pool as $name => $value) {
            $admin .= "php_admin_value[$name] = $value\n";
        }
        $root = posix_getuid() === 0;
        $user = $root ? "user = root\ngroup = root\n" : '';
        file_put_contents("{$this->dir}/fpm.conf", <<<CONF
            [global]
            error_log = {$this->dir}/fpm.log
            daemonize = no
            [www]
            {$user}listen = 127.0.0.1:{$this->port}
            listen.backlog = 512
            pm = static
            pm.max_children = $workers
            pm.max_requests = 0
            clear_env = no
            catch_workers_output = yes
            env[INFER_MODEL] = $modelPath
            $admin
            CONF);
        $cmd = [$binary, '-n', '-d', 'extension=' . DefaultModel::extension(), '-d', 'memory_limit=512M'];
        foreach ($ini as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        array_push($cmd, '-y', "{$this->dir}/fpm.conf", '-F');
        if ($root) {
            $cmd[] = '-R';
        }
        $out = "{$this->dir}/fpm.out";
        $this->process = proc_open($cmd, [1 => ['file', $out, 'w'], 2 => ['file', $out, 'a']], $pipes);
        $deadline = microtime(true) + 20;
        while (microtime(true) < $deadline) {
            $socket = @stream_socket_client("tcp://127.0.0.1:{$this->port}", $errno, $error, 0.2);
            if ($socket !== false) {
                fclose($socket);
                return;
            }
            usleep(100000);
        }
        $log = $this->log();
        $this->stop();
        throw new \RuntimeException("PHP-FPM did not start: $log");
    }

    public static function binary(): ?string
    {
        // The FPM of the PHP running the tests: beside a PHP built from
        // source (target/php-8.3/sbin), else Debian's for this version.
        $version = PHP_MAJOR_VERSION . '.' . PHP_MINOR_VERSION;
        $candidates = [dirname(PHP_BINARY, 2) . '/sbin/php-fpm', "/usr/sbin/php-fpm$version", "/usr/local/sbin/php-fpm$version"];
        foreach ($candidates as $path) {
            if (is_file($path) && is_executable($path)) {
                return $path;
            }
        }
        return null;
    }

    /**
     * GET $script with $query; return [stdout, stderr].
     *
     * @param array<string, scalar> $query
     * @return array{string, string}
     */
    public function get(string $script, array $query, float $timeout = 60.0): array
    {
        return fcgi_get('127.0.0.1', $this->port, $script, $query, $timeout);
    }

    /** PHP-FPM's own output and log. */
    public function log(): string
    {
        return @file_get_contents("{$this->dir}/fpm.out") . @file_get_contents("{$this->dir}/fpm.log");
    }

    /** The pids of the pool's workers (children of the master). */
    public function workers(): array
    {
        if (!is_resource($this->process)) {
            return [];
        }
        $master = proc_get_status($this->process)['pid'];
        $children = @file_get_contents("/proc/$master/task/$master/children");
        return array_map('intval', preg_split('/\s+/', trim((string) $children), -1, PREG_SPLIT_NO_EMPTY));
    }

    public function stop(): void
    {
        if (getmypid() !== $this->owner) {
            return;
        }
        if (is_resource($this->process)) {
            proc_terminate($this->process, 15);
            proc_close($this->process);
        }
        $this->process = null;
        foreach (glob("{$this->dir}/*") ?: [] as $path) {
            unlink($path);
        }
        @rmdir($this->dir);
    }

    public function __destruct()
    {
        $this->stop();
    }
}
