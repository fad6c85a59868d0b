<?php
// Decode and prefill with every layer on the GPU, against llama.cpp's
// own llama-bench built with the same backend from the same sources, in the
// same run (scripts/gpu-check.sh builds both). Goal: both >= 0.95x.
//
// Usage: php -d extension=... bench/gpu.php MODEL LLAMA_TOOLS_BIN [--runs N]
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

[$_, $modelPath, $tools] = $argv + [null, null, null];
if (!$modelPath || !$tools) {
    fwrite(STDERR, "usage: php bench/gpu.php MODEL LLAMA_TOOLS_BIN [--runs N]\n");
    exit(2);
}
$runs = ($i = array_search('--runs', $argv, true)) !== false ? (int) $argv[$i + 1] : 5;

$model = Model::load($modelPath, ['n_gpu_layers' => 99]);
$info = $model->info();
printf("backend %s, %d of %d layers offloaded, devices: %s\n", $info['backend'], $info['gpu_layers'], $info['layers'],
    implode(', ', array_map(fn ($d) => "{$d['name']} ({$d['description']})", $info['devices'])));
if ($info['backend'] === 'cpu' || $info['gpu_layers'] !== $info['layers']) {
    fwrite(STDERR, "the model is not fully on a GPU\n");
    exit(1);
}

function llama_bench(string $tools, string $model, array $args): float
{
    $cmd = array_merge(["$tools/llama-bench", '-m', $model, '-ngl', '99', '-r', '1', '-o', 'json'], $args);
    $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
    $out = stream_get_contents($pipes[1]);
    stream_get_contents($pipes[2]);
    proc_close($p);
    return (float) (json_decode($out, true)[0]['avg_ts'] ?? NAN);
}

// Prefill: a 512-token prompt evaluated whole (no reuse), one token generated.
$words = trim(str_repeat('the quick brown fox jumps over the lazy dog ', 60));
$prompt = implode(' ', array_slice(explode(' ', $words), 0, 600));
while ($model->countTokens($prompt, false) > 511) {
    $prompt = substr($prompt, 0, strrpos($prompt, ' '));
}
$promptTokens = $model->countTokens($prompt, false) + 1;
$prefill = fn () => $model->raw($prompt, maxTokens: 1, options: ['cache_prompt' => false]);
$prefill();
// Decode: 128 free tokens.
$story = Prompt::user('Write a long story about a dragon who learns to bake bread.');
$decode = fn () => $model->chat($story, maxTokens: 128);
$generated = $decode()->tokensGenerated();

$pp = $tg = $ours_pp = $ours_tg = [];
for ($i = 0; $i < $runs; $i++) {
    $pp[] = llama_bench($tools, $modelPath, ['-p', (string) $promptTokens, '-n', '0']);
    $ours_pp[] = $promptTokens / (ms($prefill)[0] / 1000);
    $tg[] = llama_bench($tools, $modelPath, ['-p', '0', '-n', '128']);
    $ours_tg[] = $generated / (ms($decode)[0] / 1000);
}
printf("prefill %d tokens: infer %.0f t/s, llama-bench %.0f t/s, ratio %.3f (goal >= 0.95)\n", $promptTokens, median($ours_pp), median($pp), median($ours_pp) / median($pp));
printf("decode %d tokens: infer %.0f t/s, llama-bench %.0f t/s, ratio %.3f (goal >= 0.95)\n", $generated, median($ours_tg), median($tg), median($ours_tg) / median($tg));
