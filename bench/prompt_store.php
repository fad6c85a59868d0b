<?php
// The prompt store shared by the machine's processes (infer.prompt_cache_dir).
//
//   php -d extension=target/release/libinfer.so bench/prompt_store.php MODEL [QWEN_MODEL]
//
// 1. A 1,500-token system prompt, one question, in a fresh process: the
//    prompt's time (Response::timings()['prompt_ms']) evaluating it (no
//    store) against loading its prefix from the store another process
//    wrote (a tmpfs under /dev/shm). Five processes each, medians.
// 2. What a stored prefix costs per token, in memory and on disk, for each
//    model given: the entry's size over the tokens it holds.
// 3. PHP-FPM, 4 workers (1 thread each, persistent models), 8 system prompts
//    of about 460 tokens, 400 requests from 4 concurrent clients: p50 and
//    p99 per request and the prompt tokens evaluated on the machine, with the
//    store and without it (each worker then evaluates each prompt itself).
//
// Prints Markdown tables for BENCHMARKS.md.
declare(strict_types=1);

require __DIR__ . '/support.php';
require __DIR__ . '/../tests-php/support/DefaultModel.php';
require __DIR__ . '/../tests-php/support/Fpm.php';
require __DIR__ . '/../tests-php/support/prompt-cache-prompts.php';

use Displace\Infer\{Model, Prompt};
use Displace\Infer\Tests\Support\Fpm;

const RUNS = 5;
const FPM_REQUESTS = 400;
const FPM_CLIENTS = 4;

function long_system(): string
{
    return 'You are the archive of the shop. ' . str_repeat('Every record of the archive is kept for ten years and then destroyed. ', 110);
}

if (($argv[1] ?? '') === '--child') {
    // --child MODEL QUESTION: one call; its prompt timings as JSON.
    $model = Model::load($argv[2]);
    $r = $model->chat(Prompt::system(long_system())->withUser("Question {$argv[3]}: how long are records kept?"), maxTokens: 4, nCtx: 2048);
    echo json_encode(['prompt' => $r->promptTokens(), 'cached' => $r->cachedTokens(), 'cache' => $r->timings()['cache'], 'prompt_ms' => $r->timings()['prompt_ms']]), "\n";
    exit(0);
}

[$modelPath, $qwen] = [$argv[1] ?? '', $argv[2] ?? ''];
if (!is_file($modelPath)) {
    fwrite(STDERR, "usage: php bench/prompt_store.php MODEL [QWEN_MODEL]\n");
    exit(2);
}
$ext = ini_get('extension') ?: __DIR__ . '/../target/release/libinfer.so';
$base = is_dir('/dev/shm') ? '/dev/shm' : sys_get_temp_dir();

function child(string $ext, string $store, string $model, int $question): array
{
    $cmd = [PHP_BINARY, '-d', "extension=$ext", '-d', "infer.prompt_cache_dir=$store", __FILE__, '--child', $model, (string) $question];
    return child_json($cmd, quiet: true);
}

function clear_store(string $store): void
{
    array_map('unlink', glob("$store/*") ?: []);
    @rmdir($store);
}

// 1. Evaluate against load.
$store = "$base/infer-bench-store-" . getmypid();
$evaluated = [];
$loaded = [];
for ($i = 0; $i < RUNS; $i++) {
    $evaluated[] = child($ext, '', $modelPath, $i);
}
child($ext, $store, $modelPath, 100);
for ($i = 0; $i < RUNS; $i++) {
    $row = child($ext, $store, $modelPath, $i);
    if ($row['cache'] !== 'shared') {
        throw new RuntimeException('the prefix did not come from the store: ' . json_encode($row));
    }
    $loaded[] = $row;
}
$eval = median(array_column($evaluated, 'prompt_ms'));
$load = median(array_column($loaded, 'prompt_ms'));
echo "| prompt of {$evaluated[0]['prompt']} tokens, fresh process | prompt time (median of " . RUNS . ") | tokens evaluated |\n|---|--:|--:|\n";
printf("| evaluated (no store) | %.0f ms | %d |\n", $eval, $evaluated[0]['prompt'] - $evaluated[0]['cached']);
printf("| %d-token prefix loaded from the store | %.0f ms (%.3f×) | %d |\n\n", $loaded[0]['cached'], $load, $load / $eval, $loaded[0]['prompt'] - $loaded[0]['cached']);

// 2. Cost per token.
echo "| model | stored prefix | KiB per token (keys and values in memory) | KiB per token on disk |\n|---|--:|--:|--:|\n";
foreach (array_filter([$modelPath, $qwen], 'is_file') as $m) {
    clear_store($store);
    child($ext, $store, $m, 100);
    $entries = glob("$store/*.kv");
    $file = $entries[0];
    $tokens = (int) explode('-', basename($file))[2];
    $size = filesize($file);
    $state = $size - 44 - 4 * $tokens;
    printf("| %s | %d tokens | %.1f | %.1f |\n", basename($m), $tokens, $state / 1024 / $tokens, $size / 1024 / $tokens);
}
clear_store($store);
echo "\n";

// 3. PHP-FPM.
function drive(Fpm $fpm): array
{
    $script = realpath(__DIR__ . '/../tests-php/support/fpm-worker.php');
    $out = "{$fpm->dir}/bench";
    @mkdir($out);
    $started = hrtime(true);
    $children = [];
    for ($c = 0; $c < FPM_CLIENTS; $c++) {
        $pid = pcntl_fork();
        if ($pid === 0) {
            $lines = [];
            for ($i = $c; $i < FPM_REQUESTS; $i += FPM_CLIENTS) {
                $t = hrtime(true);
                [$body] = $fpm->get($script, ['case' => 'system', 'sys' => $i % 8, 'q' => "Question $i?", 'persistent' => '1']);
                $r = json_decode($body, true);
                if (!is_array($r) || !isset($r['result'])) {
                    fwrite(STDERR, "request $i failed: $body\n");
                    exit(1);
                }
                $lines[] = json_encode(['ms' => (hrtime(true) - $t) / 1e6] + $r['result']);
            }
            file_put_contents("$out/client-$c.jsonl", implode("\n", $lines));
            exit(0);
        }
        $children[] = $pid;
    }
    foreach ($children as $pid) {
        pcntl_waitpid($pid, $status);
    }
    $wall = (hrtime(true) - $started) / 1e9;
    $rows = [];
    foreach (glob("$out/client-*.jsonl") as $file) {
        foreach (explode("\n", (string) file_get_contents($file)) as $line) {
            $rows[] = json_decode($line, true);
        }
        unlink($file);
    }
    rmdir($out);
    if (count($rows) !== FPM_REQUESTS) {
        throw new RuntimeException('requests lost: ' . count($rows));
    }
    return [$rows, $wall];
}

echo '| PHP-FPM, 4 workers, 8 system prompts, ' . FPM_REQUESTS . " requests | p50 | p99 | requests/s | prompt tokens evaluated | from the store |\n|---|--:|--:|--:|--:|--:|\n";
foreach (['without the store' => '', 'with the store' => "$store-fpm"] as $what => $dir) {
    $fpm = new Fpm(4, $modelPath, $dir === '' ? [] : ['infer.prompt_cache_dir' => $dir]);
    try {
        [$rows, $wall] = drive($fpm);
    } finally {
        $fpm->stop();
        if ($dir !== '') {
            clear_store($dir);
        }
    }
    $ms = array_column($rows, 'ms');
    $evaluatedTokens = array_sum(array_map(fn ($r) => $r['prompt'] - $r['cached'], $rows));
    $shared = count(array_filter($rows, fn ($r) => $r['cache'] === 'shared'));
    printf("| %s | %.0f ms | %.0f ms | %.1f | %d | %d requests |\n", $what, percentile($ms, 0.5), percentile($ms, 0.99), FPM_REQUESTS / $wall, $evaluatedTokens, $shared);
}
