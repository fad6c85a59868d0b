<?php
// An application's prompts: one system prompt, or three or eight asked in
// turn, six questions each, 8 tokens generated per call. In process with the
// prefix cache (infer.prompt_cache_mb = 128), in process without it (0: the
// context's own reuse only, as before the cache), and through Model::connect()
// to llama-server (one slot, its RAM prompt cache on by default) built from
// the llama.cpp the extension links. Every prompt is seen once before the
// timed rounds. Each mode and workload runs in a process (and a server) of
// its own.
//
//   php -d extension=target/release/libinfer.so bench/prompt_cache.php MODEL LLAMA_SERVER
//
// Prints a Markdown table for BENCHMARKS.md: median ms per call, and the mean
// prompt tokens taken from a cache.
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

const ROUNDS = 6;

function system_prompt(int $n): string
{
    return "Desk $n. You are assistant number $n of the shop. "
        . str_repeat("Rule $n: follow the house rules of desk $n carefully and answer briefly. ", 30);
}

if (($argv[1] ?? '') === '--child') {
    // --child TARGET PROMPTS: TARGET is a model path or a server URL.
    [, , $target, $prompts] = $argv;
    $model = str_starts_with($target, 'http') ? Model::connect($target) : Model::load($target);
    $ask = fn (int $p, int $q) => $model->chat(Prompt::system(system_prompt($p))->withUser("Question $q: what is $q plus $p?"), maxTokens: 8);
    for ($p = 0; $p < (int) $prompts; $p++) {
        $ask($p, 100);
    }
    $times = [];
    $cached = [];
    for ($q = 0; $q < ROUNDS; $q++) {
        for ($p = 0; $p < (int) $prompts; $p++) {
            [$ms, $r] = ms(fn () => $ask($p, $q));
            $times[] = $ms;
            $cached[] = $r->cachedTokens() / max(1, $r->promptTokens());
        }
    }
    echo json_encode(['p50' => median($times), 'cached' => array_sum($cached) / count($cached)]), "\n";
    exit(0);
}

[$modelPath, $server] = [$argv[1] ?? '', $argv[2] ?? ''];
if (!is_file($modelPath) || !is_file($server)) {
    fwrite(STDERR, "usage: php bench/prompt_cache.php MODEL LLAMA_SERVER\n");
    exit(2);
}
$threads = (int) trim((string) shell_exec('nproc'));
$ext = ini_get('extension') ?: __DIR__ . '/../target/release/libinfer.so';

function child(string $ext, int $mb, string $target, int $prompts): array
{
    return child_json([PHP_BINARY, '-d', "extension=$ext", '-d', "infer.prompt_cache_mb=$mb", __FILE__, '--child', $target, (string) $prompts]);
}

$rows = [];
foreach ([1, 3, 8] as $prompts) {
    $rows[$prompts]['cache'] = child($ext, 128, $modelPath, $prompts);
    $rows[$prompts]['nocache'] = child($ext, 0, $modelPath, $prompts);
    [$process, $url] = start_server($server, $modelPath, 1, $threads);
    $rows[$prompts]['server'] = child($ext, 0, $url, $prompts);
    stop_server($process);
}
$single = $rows[1]['cache']['p50'];
echo "| system prompts in turn | in process, prefix cache | in process, cache off | llama-server, 1 slot |\n|---|--:|--:|--:|\n";
foreach ($rows as $prompts => $r) {
    $cell = fn (array $x) => sprintf('%.0f ms (%.2f× one prompt; %.0f%% cached)', $x['p50'], $x['p50'] / $single, 100 * $x['cached']);
    printf("| %d | %s | %s | %s |\n", $prompts, $cell($r['cache']), $cell($r['nocache']), $cell($r['server']));
}
