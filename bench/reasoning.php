<?php
// The cost of reasoning-aware constraints (goal: "versus the same run
// unconstrained, goal <= 1.02x per token"). A raw prompt opens a <think>
// block; with a schema the thought is free text and the grammar waits for
// </think>. Measured in the same run, alternating, same threads and prompt
// (cached after the warm-up, so both sides time generation alone):
//
// - thought: N tokens of thought under the schema (the grammar never starts)
//   against the same N tokens with no constraint at all;
// - whole run: N tokens of thought, the engine's close and the schema's
//   answer, per token, against an unconstrained run of the same length.
//
//   php -d extension=target/release/libinfer.so bench/reasoning.php MODEL [RUNS] [N]
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\Model;

if ($argc < 2) {
    fwrite(STDERR, "usage: php -d extension=... bench/reasoning.php MODEL [RUNS] [N]\n");
    exit(2);
}
$model = Model::load($argv[1]);
$runs = (int) ($argv[2] ?? 10);
$n = (int) ($argv[3] ?? 64);
$prompt = "<|im_start|>system\nThink first, then answer in JSON.<|im_end|>\n"
    . "<|im_start|>user\nI had 3 apples and bought 4 more. How many apples now?<|im_end|>\n"
    . "<|im_start|>assistant\n<think>\n";
$schema = [
    'type' => 'object',
    'properties' => ['answer' => ['type' => 'integer'], 'unit' => ['enum' => ['apples', 'pears']]],
    'required' => ['answer', 'unit'],
    'additionalProperties' => false,
];

/** Generate and return [ms, tokens generated, text]. */
function run(Model $model, string $prompt, int $maxTokens, array $options): array
{
    $stream = null;
    [$t] = ms(function () use ($model, $prompt, $maxTokens, $options, &$stream) {
        $stream = $model->rawStream($prompt, maxTokens: $maxTokens, options: $options);
        $stream->text();
    });
    $r = $stream->response();
    return [$t, $r->tokensGenerated(), $r->text()];
}

$thinking = ['schema' => $schema];
$bounded = ['schema' => $schema, 'max_reasoning_tokens' => $n];
[, $total, $whole] = run($model, $prompt, 4 * $n, $bounded); // warm-up, and the whole run's length
[, , $thought] = run($model, $prompt, $n, $thinking);
[, , $free] = run($model, $prompt, $n, []);
if ($thought !== $free) {
    fwrite(STDERR, "the thought under the schema differs from the free text: the comparison would be unfair\n");
    exit(1);
}
$a = $b = $c = $d = [];
for ($i = 0; $i < $runs; $i++) {
    [$t, $k] = run($model, $prompt, $n, $thinking);
    $a[] = $t / $k;
    [$t, $k] = run($model, $prompt, $n, []);
    $b[] = $t / $k;
    [$t, $k] = run($model, $prompt, 4 * $n, $bounded);
    $c[] = $t / $k;
    [$t, $k] = run($model, $prompt, $total, []);
    $d[] = $t / $k;
}
printf("model: %s, runs: %d, thought: %d tokens, whole constrained run: %d tokens\n", basename($argv[1]), $runs, $n, $total);
printf("answer of the whole run: %s\n", json_encode(substr($whole, strpos($whole, '</think>'))));
printf("thought under a schema: %.3f ms/token; unconstrained: %.3f ms/token; ratio %.3f (goal <= 1.02)\n",
    median($a), median($b), median($a) / median($b));
printf("whole run (thought, close, schema answer): %.3f ms/token; unconstrained run of the same length: %.3f ms/token; ratio %.3f\n",
    median($c), median($d), median($c) / median($d));
