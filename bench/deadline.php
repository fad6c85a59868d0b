<?php
// How long after its deadline (option `timeout`) a call really returns,
// against the time of one generated token and of one prompt batch measured in
// the same run (goal: "stops within one token, or one prompt batch during
// prompt evaluation").
//
//   php -d extension=target/release/libinfer.so bench/deadline.php MODEL [RUNS]
//
// Generation: a short prompt asking for a long story, maxTokens 4000, deadlines
// of 0.1 to 1 s: the overshoot is the call's wall time minus the deadline.
// Prompt evaluation: a prompt of ~2,400 tokens (five batches of 512), deadlines
// shorter than its evaluation, so that the stop comes in the middle of it.
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

if ($argc < 2) {
    fwrite(STDERR, "usage: php -d extension=... bench/deadline.php MODEL [RUNS]\n");
    exit(2);
}
$model = Model::load($argv[1]);
$runs = (int) ($argv[2] ?? 5);
$story = Prompt::user('Write a very long story about a dragon who learns to read.');
$long = Prompt::user(str_repeat('The library opens at nine and closes at five. Books can be renewed online. ', 150));
$off = ['cache_prompt' => false];

// Baselines: one token of generation, one batch of prompt.
$model->chat($story, maxTokens: 8);
[$t1] = ms(fn () => $model->chat($story, maxTokens: 1, nCtx: 4096, options: $off));
[$t129, $r] = ms(fn () => $model->chat($story, maxTokens: 129, nCtx: 4096, options: $off));
$perToken = ($t129 - $t1) / max(1, $r->tokensGenerated() - 1);
[$tPrompt, $r] = ms(fn () => $model->chat($long, maxTokens: 1, nCtx: 4096, options: $off));
$batches = (int) ceil($r->promptTokens() / 512);
$perBatch = $tPrompt / $batches;
printf("one generated token: %.2f ms; prompt of %d tokens: %.0f ms, %d batches of <= 512, %.0f ms per batch\n\n",
    $perToken, $r->promptTokens(), $tPrompt, $batches, $perBatch);

printf("%-12s %-9s %6s %14s %14s %12s\n", 'phase', 'deadline', 'runs', 'overshoot p50', 'overshoot max', 'max / unit');
foreach ([[$story, [0.1, 0.25, 0.5, 1.0], 'generation', $perToken], [$long, [0.05, 0.15, 0.3], 'prompt', $perBatch]] as [$prompt, $deadlines, $phase, $unit]) {
    foreach ($deadlines as $d) {
        $over = [];
        for ($i = 0; $i < $runs; $i++) {
            [$t, $r] = ms(fn () => $model->chat($prompt, maxTokens: 4000, nCtx: 4096, options: $off + ['timeout' => $d]));
            if ($r->finishReason() !== 'timeout') {
                fwrite(STDERR, "a run ended with '{$r->finishReason()}' before its deadline of $d s\n");
                exit(1);
            }
            if ($phase === 'prompt' && $r->tokensGenerated() > 0) {
                fwrite(STDERR, "the prompt was evaluated before the deadline of $d s: shorten it\n");
                exit(1);
            }
            $over[] = $t - $d * 1000;
        }
        printf("%-12s %-9s %6d %11.2f ms %11.2f ms %11.2fx\n", $phase, "{$d} s", $runs, median($over), max($over), max($over) / $unit);
    }
}
printf("\n'max / unit': the worst overshoot in generated tokens (generation) or prompt batches (prompt); goal <= 1.\n");
