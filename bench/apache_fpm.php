<?php
// Threads against processes on PHP 8.3: Apache's event MPM, one child with N
// threads and the thread-safe PHP module (scripts/apache-zts.sh), against
// PHP-FPM with N static workers of the non-thread-safe build, each request a
// chat on a persistent model (tests-php/support/apache-worker.php and
// fpm-worker.php: the same call, n_threads 1, greedy), driven by N clients
// that each send their requests one after another. Reported per N and model:
// requests/s, latency p50/p99, and memory: the proportional set size (PSS:
// pages shared between processes counted once) of the Apache child against
// the sum over the FPM workers, and their RSS.
//
//   target/php-8.3/bin/php -d include_path=.:/usr/share/php \
//       -d extension=target/php-8.3/infer.so bench/apache_fpm.php \
//       MODEL ZTS_EXTENSION [N,N…] [REQUESTS]
//
// Run with the non-thread-safe PHP 8.3 (its php-fpm is the one beside it);
// ZTS_EXTENSION is the extension built for the thread-safe one
// (make build PHP=8.3-zts). make bench-apache runs it for SmolLM2 and Qwen.
declare(strict_types=1);

require __DIR__ . '/support.php';
require __DIR__ . '/../tests-php/support/DefaultModel.php';
require __DIR__ . '/../tests-php/support/Fpm.php';
require __DIR__ . '/../tests-php/support/Apache.php';

use Displace\Infer\Tests\Support\{Apache, Fpm};

[$script, $model, $ztsExtension] = $argv + [null, '', ''];
$counts = array_map('intval', explode(',', $argv[3] ?? '4,8'));
$requests = (int) ($argv[4] ?? 48);
if (!is_file($model) || !is_file($ztsExtension) || PHP_ZTS) {
    fwrite(STDERR, "usage: (non-thread-safe PHP 8.3) bench/apache_fpm.php MODEL ZTS_EXTENSION [N,N…] [REQUESTS]\n");
    exit(2);
}

/** PSS and RSS of $pid in KiB. */
function memory(int $pid): array
{
    $text = (string) @file_get_contents("/proc/$pid/smaps_rollup");
    preg_match('/^Pss:\s+(\d+) kB/m', $text, $pss);
    preg_match('/^Rss:\s+(\d+) kB/m', $text, $rss);
    return [(int) ($pss[1] ?? 0), (int) ($rss[1] ?? 0)];
}

/**
 * $clients clients sending $requests through $send (which returns the
 * decoded answer): the latencies (ms), the wall time (s) and the pids that
 * answered.
 */
function drive(int $clients, int $requests, callable $send, string $dir): array
{
    $request = function (int $i) use ($send): ?array {
        $answer = $send($i);
        if (!isset($answer['result']) || !is_string($answer['result'])) {
            fwrite(STDERR, 'request failed: ' . json_encode($answer) . "\n");
            return null;
        }
        return ['pid' => $answer['pid']];
    };
    [$records, $wall] = fork_clients($clients, $requests, $request, $dir);
    return [array_column($records, 'ms'), $wall, array_values(array_unique(array_column($records, 'pid')))];
}

$prompts = ['Name a colour.', 'What is 2+2?', 'Say hello.', 'Name a fruit.'];
$query = fn (int $i) => ['case' => 'chat', 'q' => $prompts[$i % 4], 'persistent' => '1', 'max' => 16];
$scratch = sys_get_temp_dir() . '/infer-bench-apache-' . getmypid();
@mkdir($scratch);
printf("%s, %d requests per run, 16 tokens each, n_threads 1 per request, greedy\n", basename($model), $requests);
printf("%-8s %3s %8s %9s %9s %10s %10s\n", 'server', 'N', 'req/s', 'p50 ms', 'p99 ms', 'PSS MiB', 'RSS MiB');
foreach ($counts as $n) {
    // Apache: one child, N threads.
    $apache = new Apache($n, [], ['INFER_MODEL' => $model, 'INFER_EXTENSION' => $ztsExtension]);
    // Every thread has loaded (the first request loads, the others wait).
    drive($n, $n * 2, fn ($i) => $apache->get($query($i))['json'], $scratch);
    [$ms, $wall, $pids] = drive($n, $requests, fn ($i) => $apache->get($query($i))['json'], $scratch);
    $apacheMem = memory($pids[0]);
    $apacheRow = [count($ms) / $wall, percentile($ms, 0.5), percentile($ms, 0.99), $apacheMem, count($pids)];
    $apache->stop();

    // PHP-FPM: N workers, each its own persistent model.
    $fpm = new Fpm($n, $model);
    $worker = (string) realpath(__DIR__ . '/../tests-php/support/apache-worker.php');
    $send = fn ($i) => json_decode($fpm->get($worker, $query($i), 300.0)[0], true);
    drive($n, $n * 4, $send, $scratch);
    [$ms, $wall, $pids] = drive($n, $requests, $send, $scratch);
    $fpmMem = [0, 0];
    foreach ($fpm->workers() as $pid) {
        [$pss, $rss] = memory($pid);
        $fpmMem = [$fpmMem[0] + $pss, $fpmMem[1] + $rss];
    }
    $fpmRow = [count($ms) / $wall, percentile($ms, 0.5), percentile($ms, 0.99), $fpmMem, count($pids)];
    $fpm->stop();

    foreach (['apache' => $apacheRow, 'php-fpm' => $fpmRow] as $name => [$rps, $p50, $p99, [$pss, $rss], $procs]) {
        printf("%-8s %3d %8.2f %9.0f %9.0f %10.0f %10.0f  (%d process%s answered)\n", $name, $n, $rps, $p50, $p99, $pss / 1024, $rss / 1024, $procs, $procs > 1 ? 'es' : '');
    }
    printf("apache/php-fpm at N=%d: throughput %.3fx, memory (PSS) %.3fx\n", $n, $apacheRow[0] / $fpmRow[0], $apacheRow[3][0] / max(1, $fpmRow[3][0]));
}
@rmdir($scratch);
