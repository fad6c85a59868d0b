<?php
// Helpers the PHP benchmarks share.
declare(strict_types=1);

/** The notes the extraction benchmarks read, one person each. */
const NOTES = [
    'Maria is 31 years old and lives in Lisbon.',
    'Tom, a 52-year-old baker from Leeds, opened his shop in 1998.',
    'Our new colleague Aiko (27) moved here from Osaka last spring.',
    'Pedro Alves, 45, has lived in Porto all his life.',
    'At 19, Lena left Berlin to study.',
    'Sam is a retired teacher aged 68 who lives in Dublin.',
    'Grace, 36, runs a bakery in Nairobi.',
    'Ivan is 24 and works in Kyiv as a nurse.',
];

/** The median of $xs (the mean of the middle two for an even count). */
function median(array $xs): float
{
    sort($xs);
    $n = count($xs);
    return $n % 2 ? $xs[intdiv($n, 2)] : ($xs[$n / 2 - 1] + $xs[$n / 2]) / 2;
}

/** The value below which a share $p of $values falls (nearest rank). */
function percentile(array $values, float $p): float
{
    sort($values);
    return $values[(int) min(count($values) - 1, floor($p * count($values)))];
}

/**
 * Run $fn once: [its wall time in milliseconds, what it returned].
 *
 * @return array{float, mixed}
 */
function ms(callable $fn): array
{
    $t = hrtime(true);
    $r = $fn();
    return [(hrtime(true) - $t) / 1e6, $r];
}

/**
 * Run $cmd (a benchmark's child process, in $cwd) and decode the JSON object
 * it prints; throws with its output when it prints none (or, with $quiet,
 * anything on stderr).
 */
function child_json(array $cmd, ?string $cwd = null, bool $quiet = false): array
{
    $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, $cwd);
    $out = stream_get_contents($pipes[1]);
    $err = stream_get_contents($pipes[2]);
    proc_close($p);
    $row = json_decode(trim($out), true);
    if (!is_array($row) || ($quiet && $err !== '')) {
        throw new RuntimeException('child ' . implode(' ', $cmd) . " failed: $out $err");
    }
    return $row;
}

/** @return array{resource, string} the server process and its base URL */
function start_server(string $binary, string $model, int $slots, int $threads): array
{
    $probe = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
    fclose($probe);
    $process = proc_open(
        [$binary, '-m', $model, '--host', '127.0.0.1', '--port', (string) $port, '-fa', 'off',
            '-t', (string) $threads, '-tb', (string) $threads, '-np', (string) $slots, '-c', (string) (2048 * $slots)],
        [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']],
        $pipes,
    );
    $url = "http://127.0.0.1:$port";
    $deadline = microtime(true) + 60;
    while (microtime(true) < $deadline) {
        if (str_contains((string) @file_get_contents("$url/health"), 'ok')) {
            return [$process, $url];
        }
        usleep(100000);
    }
    throw new RuntimeException('llama-server did not start');
}

function stop_server($process): void
{
    proc_terminate($process);
    proc_close($process);
}
