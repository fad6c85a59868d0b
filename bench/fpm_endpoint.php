<?php
// An extraction endpoint under PHP-FPM (examples/extract-endpoint.php, two
// static workers on loopback), driven by a load generator written here:
// request latency p50/p99 and requests per second with persistent models
// against Model::load() in every request, and against the same extraction
// called in-process on a warm model, all measured in the same run. Then the
// resident memory of the workers over many requests with a persistent model.
//
//   php -d extension=target/release/libinfer.so bench/fpm_endpoint.php MODEL \
//       [--requests 120] [--memory-requests 2000] [--examples 1|0] [--json FILE]
//
// --examples 0 leaves the worked examples out of the endpoint's system prompt
// (about 50 tokens instead of about 300): less for the prompt cache to save.
//
// The generator speaks FastCGI to PHP-FPM directly, as a web server's
// fastcgi_pass would: the figures leave out the web server's own proxy hop.
//
// Rounds (each request extracts one of the notes below, in turn, so that
// consecutive requests share the system prompt and differ in the note):
//   in-process  one process, a model loaded and warmed once, extract_person()
//               called back to back: the floor a web request could reach;
//   sequential  one client, one request at a time: latency without queueing,
//               for persistent and per-request loading;
//   concurrent  two clients (one per worker): latency and requests/s under load;
//   memory      two clients, --memory-requests persistent requests; VmRSS of
//               each worker after the warm-up and at the end.
declare(strict_types=1);

require __DIR__ . '/../examples/extraction.php';
require __DIR__ . '/support.php';
require __DIR__ . '/../tests-php/support/DefaultModel.php';
require __DIR__ . '/../tests-php/support/Fpm.php';

use Displace\Infer\Model;
use Displace\Infer\Tests\Support\Fpm;

define('ENDPOINT', (string) realpath(__DIR__ . '/../examples/extract-endpoint.php'));

function summary(array $ms, float $wall): array
{
    return ['n' => count($ms), 'p50' => percentile($ms, 0.5), 'p99' => percentile($ms, 0.99), 'rps' => count($ms) / $wall];
}

/**
 * Send $requests requests from $clients forked clients (request i extracts
 * NOTES[i % 8]); return the latencies (ms), the wall time (s), the worker pids.
 */
function drive(Fpm $fpm, int $clients, int $requests, bool $persistent, int $offset = 0, bool $examples = true): array
{
    $request = function (int $i) use ($fpm, $persistent, $offset, $examples): ?array {
        [$body, $stderr] = $fpm->get(ENDPOINT, ['note' => NOTES[($i + $offset) % count(NOTES)], 'persistent' => $persistent ? '1' : '0', 'examples' => $examples ? '1' : '0']);
        $r = json_decode($body, true);
        if (!is_array($r) || !isset($r['data']) || $stderr !== '') {
            fwrite(STDERR, "request $i failed: $body $stderr\n");
            return null;
        }
        return ['pid' => $r['pid'], 'cached' => $r['cached']];
    };
    try {
        [$records, $wall] = fork_clients($clients, $requests, $request, $fpm->dir);
    } catch (RuntimeException $e) {
        fwrite(STDERR, $e->getMessage() . "\n" . $fpm->log());
        exit(1);
    }
    $pids = array_unique(array_column($records, 'pid'));
    return [array_column($records, 'ms'), $wall, array_values($pids), array_column($records, 'cached')];
}

$args = $argv;
array_shift($args);
$model = array_shift($args) ?? '';
$opts = options($args, ['requests' => 120, 'memory-requests' => 2000, 'examples' => '1', 'json' => null]);
if (!is_file($model)) {
    fwrite(STDERR, "usage: php -d extension=libinfer.so bench/fpm_endpoint.php MODEL [--requests N] [--memory-requests N] [--json FILE]\n");
    exit(2);
}
$requests = (int) $opts['requests'];
$examples = $opts['examples'] !== '0';
$model = (string) realpath($model);
putenv("INFER_MODEL=$model");
$results = [];

// In-process: a warm model, the same extraction back to back.
$m = Model::load($model);
extract_person($m, NOTES[0], $examples);
$ms = [];
$t0 = hrtime(true);
for ($i = 1; $i <= $requests; $i++) {
    $t = hrtime(true);
    extract_person($m, NOTES[$i % count(NOTES)], $examples)->json();
    $ms[] = (hrtime(true) - $t) / 1e6;
}
$results['in-process warm chat()'] = summary($ms, (hrtime(true) - $t0) / 1e9);
$m->close();
unset($m);

$fpm = new Fpm(2, $model);
// Warm-up: until both workers have answered a persistent request.
$seen = [];
for ($round = 0; $round < 20 && count($seen) < 2; $round++) {
    [, , $pids] = drive($fpm, 2, 2, true, 0, $examples);
    $seen += array_fill_keys($pids, true);
}
$workers = array_keys($seen);

foreach ([true, false] as $persistent) {
    $name = $persistent ? 'persistent' : 'load per request';
    [$ms, $wall, , $cached] = drive($fpm, 1, $requests, $persistent, 0, $examples);
    $results["FPM sequential, $name"] = summary($ms, $wall) + ['mean cached' => array_sum($cached) / count($cached)];
    [$ms, $wall] = drive($fpm, 2, $requests, $persistent, 0, $examples);
    $results["FPM 2 clients, $name"] = summary($ms, $wall);
}

printf("%-34s %6s %9s %9s %8s\n", 'round', 'n', 'p50 ms', 'p99 ms', 'req/s');
foreach ($results as $name => $r) {
    printf("%-34s %6d %9.1f %9.1f %8.2f\n", $name, $r['n'], $r['p50'], $r['p99'], $r['rps']);
}
$p = $results['FPM sequential, persistent']['p50'];
printf("\npersistent p50 / load-per-request p50 (sequential): %.3f (goal <= 0.5)\n", $p / $results['FPM sequential, load per request']['p50']);
printf("persistent p50 / load-per-request p50 (2 clients):  %.3f\n", $results['FPM 2 clients, persistent']['p50'] / $results['FPM 2 clients, load per request']['p50']);
printf("persistent p50 (sequential) / in-process warm p50:  %.3f (goal <= 1.1)\n", $p / $results['in-process warm chat()']['p50']);
printf("prompt tokens from the cache per persistent request: %.1f\n", $results['FPM sequential, persistent']['mean cached']);

// Memory: VmRSS of each worker over many persistent requests.
$total = (int) $opts['memory-requests'];
if ($total > 0) {
    $before = array_map('rss_kb', $workers);
    $samples = [];
    $done = 0;
    $step = max(2, intdiv($total, 8));
    while ($done < $total) {
        $n = min($step, $total - $done);
        [, , $pids] = drive($fpm, 2, $n, true, $done, $examples);
        if (array_diff($pids, $workers)) {
            fwrite(STDERR, "a worker was replaced during the memory round\n");
            exit(1);
        }
        $done += $n;
        $samples[$done] = array_map('rss_kb', $workers);
    }
    printf("\nVmRSS per worker over %d persistent requests (MB):\n", $total);
    printf("  after warm-up: %s\n", implode(', ', array_map(static fn ($kb) => sprintf('%.1f', $kb / 1024), $before)));
    foreach ($samples as $n => $kbs) {
        printf("  after %5d:   %s\n", $n, implode(', ', array_map(static fn ($kb) => sprintf('%.1f', $kb / 1024), $kbs)));
    }
    $growth = max(array_map(static fn ($a, $b) => ($b - $a) / 1024, $before, end($samples)));
    printf("largest growth: %.2f MB (goal < 10 MB)\n", $growth);
    $results['memory'] = ['requests' => $total, 'before_kb' => $before, 'samples_kb' => $samples, 'growth_mb' => $growth];
}
$fpm->stop();
if ($opts['json'] !== null) {
    file_put_contents($opts['json'], json_encode($results, JSON_PRETTY_PRINT));
}
