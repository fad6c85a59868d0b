<?php
// "In-process or server?": PHP-FPM workers that each keep the model
// (persistent, in-process) against the same workers using the installation's
// shared llama-server (`['shared' => true]`, php.ini infer.server_*), at
// 1, 4, 8 and 16 concurrent requests. Same machine, same run, same thread
// budget (the workers share the cores; the server gets as many threads).
//
//   php -d extension=target/release/libinfer.so bench/shared_server.php MODEL LLAMA_SERVER \
//       [--concurrency 1,4,8,16] [--per-client 4] [--max-tokens 64] [--threads 2] [--json FILE]
//
// For each level C: a pool of C static workers, C clients each sending
// --per-client requests back to back (after one warm-up request per client).
// Figures: aggregate generated tokens/s, p50 and p99 of the request latency,
// resident memory (VmRSS) of the workers and, for the server, of
// llama-server. The shared server runs with C slots of 2048 tokens.

declare(strict_types=1);

require __DIR__ . '/support.php';
require __DIR__ . '/../tests-php/support/DefaultModel.php';
require __DIR__ . '/../tests-php/support/Fpm.php';

use Displace\Infer\Tests\Support\Fpm;

define('ENDPOINT', (string) realpath(__DIR__ . '/shared_endpoint.php'));

/**
 * $clients forked clients, $per requests each: [latencies ms, tokens, wall s].
 */
function drive(Fpm $fpm, string $mode, int $clients, int $per, int $max): array
{
    $dir = $fpm->dir;
    $children = [];
    $started = hrtime(true);
    for ($c = 0; $c < $clients; $c++) {
        $pid = pcntl_fork();
        if ($pid === 0) {
            $lines = [];
            for ($k = 0; $k < $per; $k++) {
                $t = hrtime(true);
                [$body] = $fpm->get(ENDPOINT, ['mode' => $mode, 'i' => $c * $per + $k, 'max' => $max], 600.0);
                $ms = (hrtime(true) - $t) / 1e6;
                $r = json_decode($body, true);
                if (!is_array($r) || !isset($r['tokens'])) {
                    fwrite(STDERR, "request failed: $body\n");
                    posix_kill(getmypid(), SIGKILL);
                }
                $lines[] = json_encode(['ms' => $ms, 'tokens' => $r['tokens']]);
            }
            file_put_contents("$dir/client-$c.jsonl", implode("\n", $lines));
            posix_kill(getmypid(), SIGKILL);
        }
        $children[] = $pid;
    }
    foreach ($children as $pid) {
        pcntl_waitpid($pid, $status);
    }
    $wall = (hrtime(true) - $started) / 1e9;
    $ms = [];
    $tokens = 0;
    for ($c = 0; $c < $clients; $c++) {
        $file = "$dir/client-$c.jsonl";
        if (!is_file($file)) {
            fwrite(STDERR, "client $c failed\n" . $fpm->log());
            exit(1);
        }
        foreach (explode("\n", (string) file_get_contents($file)) as $line) {
            $r = json_decode($line, true);
            $ms[] = $r['ms'];
            $tokens += $r['tokens'];
        }
        unlink($file);
    }
    return [$ms, $tokens, $wall];
}

$args = $argv;
array_shift($args);
$model = (string) realpath((string) array_shift($args));
$server = (string) realpath((string) array_shift($args));
$opts = options($args, ['concurrency' => '1,4,8,16', 'per-client' => '4', 'max-tokens' => '64', 'threads' => '2', 'json' => null]);
if (!is_file($model) || !is_file($server)) {
    fwrite(STDERR, "usage: php -d extension=libinfer.so bench/shared_server.php MODEL LLAMA_SERVER [--concurrency 1,4,8,16] [--per-client 4] [--max-tokens 64] [--threads 2]\n");
    exit(2);
}
$per = (int) $opts['per-client'];
$max = (int) $opts['max-tokens'];
$threads = (int) $opts['threads'];
$results = [];
printf("%s, %d tokens per request, %d requests per client, %d threads\n", basename($model), $max, $per, $threads);
printf("| concurrent | mode | tokens/s | p50 ms | p99 ms | workers RSS MB | server RSS MB |\n|--:|---|--:|--:|--:|--:|--:|\n");
foreach (array_map('intval', explode(',', $opts['concurrency'])) as $c) {
    foreach (['inproc', 'shared'] as $mode) {
        $dir = sys_get_temp_dir() . '/infer-bench-shared-' . getmypid() . "-$c";
        $ini = $mode === 'shared' ? [
            'infer.server_model' => $model,
            'infer.server_binary' => $server,
            'infer.server_dir' => $dir,
            'infer.server_slots' => (string) $c,
            'infer.server_ctx' => '2048',
            'infer.server_threads' => (string) $threads,
        ] : [];
        $fpm = new Fpm($c, $model, $ini);
        drive($fpm, $mode, $c, 1, $max); // warm-up: each worker loads, the server starts
        [$ms, $tokens, $wall] = drive($fpm, $mode, $c, $per, $max);
        $workers = array_sum(array_map(fn (int $pid): int => max(0, rss_kb($pid)), $fpm->workers())) / 1024;
        $serverRss = 0.0;
        if ($mode === 'shared') {
            $record = json_decode((string) @file_get_contents("$dir/server.json"), true);
            $serverRss = is_array($record) ? max(0, rss_kb((int) ($record['server']['pid'] ?? 0))) / 1024 : 0.0;
        }
        $fpm->stop();
        $row = ['concurrency' => $c, 'mode' => $mode, 'tokens_per_s' => $tokens / $wall, 'p50' => percentile($ms, 0.5),
            'p99' => percentile($ms, 0.99), 'workers_rss_mb' => $workers, 'server_rss_mb' => $serverRss, 'requests' => count($ms)];
        $results[] = $row;
        printf("| %d | %s | %.1f | %.0f | %.0f | %.0f | %.0f |\n", $c, $mode, $row['tokens_per_s'], $row['p50'], $row['p99'], $workers, $serverRss);
        if ($mode === 'shared') {
            // The server stops once the pool's workers are gone.
            $deadline = microtime(true) + 10;
            while (is_file("$dir/server.json") && microtime(true) < $deadline) {
                usleep(100000);
            }
            exec('rm -rf ' . escapeshellarg($dir));
        }
    }
    $in = $results[count($results) - 2];
    $sh = $results[count($results) - 1];
    printf("| %d | shared / in-process | **%.2f×** | %.2f× | %.2f× | | |\n", $c, $sh['tokens_per_s'] / $in['tokens_per_s'], $sh['p50'] / $in['p50'], $sh['p99'] / $in['p99']);
}
if ($opts['json'] !== null) {
    file_put_contents($opts['json'], json_encode($results, JSON_PRETTY_PRINT));
}
