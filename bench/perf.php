<?php
// The extension against llama.cpp's own tools, measured
// side by side in one run. `make bench-perf` builds the tools
// (bench/build-llama-tools.sh) and runs this with the extension loaded.
//
//   php -d extension=target/release/libinfer.so bench/perf.php MODEL TOOLS_DIR [THREADS]
//
// Prints a Markdown table for BENCHMARKS.md. Timing is wall-clock (hrtime) in
// this process; each figure is the median of several runs after a warm-up.
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Grammar, Model, Prompt};

[$model_path, $tools, $threads] = model_and_tools($argv, 'bench/perf.php MODEL TOOLS_DIR [THREADS]');
const RUNS = 7;

/** Median wall time of $f in milliseconds, after one untimed warm-up call. */
function time_ms(callable $f, int $runs = RUNS): float
{
    $f();
    $times = [];
    for ($i = 0; $i < $runs; $i++) {
        $t = hrtime(true);
        $f();
        $times[] = (hrtime(true) - $t) / 1e6;
    }
    return median($times);
}


/** Resident memory of this process in MB: [total, file-backed, anonymous]. */
function rss(): array
{
    $status = file_get_contents('/proc/self/status');
    $kb = fn (string $k) => preg_match("/^$k:\\s+(\\d+) kB/m", $status, $m) ? (int) $m[1] / 1024 : 0.0;
    return [$kb('VmRSS'), $kb('RssFile'), $kb('RssAnon')];
}



$rows = [];
$row = function (string $figure, string $ours, string $baseline, string $ratio, string $target, bool $met) use (&$rows): void {
    $rows[] = sprintf('| %s | %s | %s | %s | %s | %s |', $figure, $ours, $baseline, $ratio, $target, $met ? 'met' : '**not met**');
    fwrite(STDERR, end($rows) . "\n");
};

$rss_before = rss();
$model = Model::load($model_path, ['n_threads' => $threads]);
$rss_loaded = rss();
$model_mb = filesize($model_path) / 1048576;

// 1. The SPEC's extraction example: warm chat() against llama-completion.
[$system, $user, $schema, $prompt, $gbnf_file] = spec_extraction();
$extract = fn (bool $cache) => $model->chat($prompt, maxTokens: 128, options: ['schema' => $schema, 'cache_prompt' => $cache]);
$ours = $extract(false);
// Interleaved, so that a slow patch of a shared machine hits both sides.
$lc = [];
$cold = [];
for ($i = 0; $i < RUNS; $i++) {
    $lc[] = completion($tools, $model_path, $threads, chatml($system, $user), 128, $gbnf_file);
    $cold[] = time_ms(fn () => $extract(false), 1);
}
$lc_ms = median(array_column($lc, 'compute'));
$cold = median($cold);
if ($lc[0]['text'] !== $ours->text() || $lc[0]['prompt_tokens'] !== $ours->promptTokens()) {
    fwrite(STDERR, sprintf(
        "warning: llama-completion differs: %d prompt tokens, %s; ours %d, %s\n",
        $lc[0]['prompt_tokens'], $lc[0]['text'], $ours->promptTokens(), $ours->text(),
    ));
}
$warm = time_ms(fn () => $extract(true));
$row(
    "Extraction example, warm `chat()` ({$ours->promptTokens()} prompt + {$ours->tokensGenerated()} generated tokens), prompt cache off",
    sprintf('%.1f ms', $cold), sprintf('%.1f ms (llama-completion compute)', $lc_ms),
    sprintf('%.3f×', $cold / $lc_ms), '≤ 1.05×', $cold / $lc_ms <= 1.05,
);
$row(
    'Same call repeated, prompt cache on (default)',
    sprintf('%.1f ms', $warm), sprintf('%.1f ms', $lc_ms), sprintf('%.3f×', $warm / $lc_ms), '(information)', true,
);

// 2. Constraints: 64 tokens under a JSON-schema grammar against 64 free tokens.
$list_schema = ['type' => 'array', 'minItems' => 30, 'items' => ['type' => 'object', 'properties' => [
    'title' => ['type' => 'string'], 'author' => ['type' => 'string'], 'year' => ['type' => 'integer'],
]]];
$books = Prompt::user('List thirty classic novels as JSON objects with title, author and year.');
$free = fn () => $model->chat($books, maxTokens: 64);
$constrained = fn () => $model->chat($books, maxTokens: 64, options: ['schema' => $list_schema]);
[$a, $b] = [$free(), $constrained()];
$free_ms = [];
$constrained_ms = [];
$ratios = [];
// Pairs of runs back to back; the figure is the median of the pairs' ratios,
// which cancels the slow patches of a shared machine better than a ratio of medians.
for ($i = 0; $i < 2 * RUNS; $i++) {
    $free_ms[] = time_ms($free, 1);
    $constrained_ms[] = time_ms($constrained, 1);
    $ratios[] = end($constrained_ms) / end($free_ms);
}
[$free_ms, $constrained_ms, $grammar_ratio] = [median($free_ms), median($constrained_ms), median($ratios)];
$row(
    sprintf('64 tokens under a JSON-schema grammar vs 64 free tokens (generated %d / %d)', $b->tokensGenerated(), $a->tokensGenerated()),
    sprintf('%.1f ms', $constrained_ms), sprintf('%.1f ms', $free_ms),
    sprintf('%.3f× (median of %d paired runs)', $grammar_ratio, count($ratios)), '≤ 1.02×', $grammar_ratio <= 1.02,
);

// 3. Decode speed: 128 free tokens against llama-bench tg128.
$story = Prompt::user('Write a long story about a dragon who learns to bake bread.');
$decode = fn () => $model->chat($story, maxTokens: 128);
$generated = $decode()->tokensGenerated();
$tg = [];
$ours_ts = [];
$ratios = [];
for ($i = 0; $i < RUNS; $i++) {
    [$code, $out] = run_command(["$tools/llama-bench", '-m', $model_path, '-t', (string) $threads, '-p', '0', '-n', '128', '-r', '1', '-o', 'json']);
    $tg[] = json_decode($out, true)[0]['avg_ts'] ?? NAN;
    // The repeated prompt is reused: a call evaluates its last token and the generated ones.
    $ours_ts[] = $generated / (time_ms($decode, 1) / 1000);
    $ratios[] = end($ours_ts) / end($tg);
}
[$tg, $ours_ts, $decode_ratio] = [median($tg), median($ours_ts), median($ratios)];
$row(
    "Unconstrained decode, $generated tokens (whole `chat()` call, sampling included)",
    sprintf('%.1f tokens/s', $ours_ts), sprintf('%.1f tokens/s (llama-bench tg128)', $tg),
    sprintf('%.3f× (median of %d paired runs)', $decode_ratio, count($ratios)), '≥ 0.95×', $decode_ratio >= 0.95,
);

// 4. Prefix reuse: a ~400-token system prompt, then other questions.
$long_system = 'You are the help desk of the Riverside Public Library. ' . str_repeat(
    'The library opens at nine in the morning and closes at eight in the evening on weekdays; on Saturdays it closes '
    . 'at five and on Sundays it stays closed. Members may borrow up to ten books for three weeks and renew them '
    . 'twice online. Late returns cost twenty cents a day. ',
    6,
);
$questions = ['When do you open on Saturday?', 'How many books can I borrow?', 'What does a late return cost?', 'Can I renew online?'];
$firsts = [];
$laters = [];
for ($i = 0; $i < RUNS; $i++) {
    // Something unrelated first, so the first question finds nothing cached.
    $model->raw('Unrelated text ' . $i, maxTokens: 1);
    $t = hrtime(true);
    $first = $model->chat(Prompt::system($long_system)->withUser($questions[0]), maxTokens: 16);
    $firsts[] = (hrtime(true) - $t) / 1e6;
    foreach (array_slice($questions, 1) as $q) {
        $t = hrtime(true);
        $model->chat(Prompt::system($long_system)->withUser($q), maxTokens: 16);
        $laters[] = (hrtime(true) - $t) / 1e6;
    }
}
[$first_ms, $later_ms] = [median($firsts), median($laters)];
$row(
    "Shared {$first->promptTokens()}-token prompt: later calls vs the first (16 tokens generated)",
    sprintf('%.1f ms', $later_ms), sprintf('%.1f ms', $first_ms),
    sprintf('%.3f×', $later_ms / $first_ms), '≤ 0.3×', $later_ms / $first_ms <= 0.3,
);

// 5. Grammar set-up for the extraction schema: conversion from a PHP array.
$convert_ms = time_ms(function () use ($schema) {
    for ($i = 0; $i < 1000; $i++) {
        Grammar::fromSchema($schema);
    }
}) / 1000;
$row(
    'Extraction schema → GBNF from PHP (`Grammar::fromSchema`)',
    sprintf('%.3f ms', $convert_ms), '', '', '< 1 ms set-up per call', $convert_ms < 1,
);

// 6. Memory: resident after load, and after 100 more calls.
for ($i = 0; $i < 100; $i++) {
    match ($i % 3) {
        0 => $extract(true),
        1 => $model->chat($books, maxTokens: 16, options: ['schema' => $list_schema]),
        2 => $model->raw("Once upon a time, $i", maxTokens: 16),
    };
}
$rss_after = rss();
$row(
    sprintf('Resident memory after load / after 100 more calls (model file %.0f MB)', $model_mb),
    sprintf('%.0f MB / %.0f MB', $rss_loaded[0], $rss_after[0]),
    sprintf('%.0f MB before load', $rss_before[0]), '', 'report', true,
);
$row(
    '… of which file-backed (the mmapped weights) / anonymous',
    sprintf('%.0f MB / %.0f MB after load; %.0f MB / %.0f MB after 100 calls', $rss_loaded[1], $rss_loaded[2], $rss_after[1], $rss_after[2]),
    '', '', 'weights mmapped', $rss_loaded[2] - $rss_before[2] < $model_mb / 2,
);
unlink($gbnf_file);

echo "| figure | infer | baseline (same run) | ratio | target | |\n|---|---|---|---|---|---|\n";
echo implode("\n", $rows), "\n";
