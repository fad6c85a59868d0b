<?php
// The cost of rendering the chat template (goal: "under 1% of the
// extraction example's time"): renderPrompt() of the extraction example's
// prompt, against the whole extraction call (examples/extraction.php) measured
// in the same run, with the prompt cache off so that every call evaluates its
// prompt as a first request does.
//
//   php -d extension=target/release/libinfer.so bench/template.php MODEL [RUNS]
declare(strict_types=1);

require __DIR__ . '/support.php';
require __DIR__ . '/../examples/extraction.php';

use Displace\Infer\{Model, Prompt};

if ($argc < 2) {
    fwrite(STDERR, "usage: php -d extension=... bench/template.php MODEL [RUNS]\n");
    exit(2);
}
$model = Model::load($argv[1]);
$runs = (int) ($argv[2] ?? 10);
$note = 'Maria is 31 years old and lives in Lisbon.';
$prompt = Prompt::system(EXTRACTION_INSTRUCTIONS . EXTRACTION_EXAMPLES)->withUser("Note: $note");
$off = ['schema' => EXTRACTION_SCHEMA, 'cache_prompt' => false];

$model->chat($prompt, maxTokens: 64, options: $off); // warm-up
$render = [];
$call = [];
for ($i = 0; $i < $runs; $i++) {
    [$render[]] = ms(fn () => $model->renderPrompt($prompt));
    [$call[]] = ms(fn () => $model->chat($prompt, maxTokens: 64, options: $off));
}
// Many renders per sample, for a resolution finer than one call.
$batch = 200;
$perRender = [];
for ($i = 0; $i < $runs; $i++) {
    [$t] = ms(function () use ($model, $prompt, $batch) {
        for ($j = 0; $j < $batch; $j++) {
            $model->renderPrompt($prompt);
        }
    });
    $perRender[] = $t / $batch;
}
printf("model: %s, template kind: %s, runs: %d\n", basename($argv[1]), $model->chatTemplateKind(), $runs);
printf("renderPrompt(): %.4f ms (median of %d x %d renders; single renders: median %.4f ms)\n",
    median($perRender), $runs, $batch, median($render));
printf("extraction call (chat + schema, prompt cache off): %.1f ms\n", median($call));
printf("render / call: %.5f%% (goal < 1%%)\n", 100 * median($perRender) / median($call));
