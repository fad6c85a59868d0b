<?php
// What the samplers and the log-probabilities cost per generated token
// (issue 52): each setting against the default chain at the same
// temperature, in one run, interleaved (the order rotated every round),
// medians of ROUNDS. Per token: generation time / tokens generated (the
// settings write texts of other lengths). Also the cost of the exact
// grammar check when drawing under a schema (every refused pick masks the
// whole vocabulary, as llama-server does), against greedy decoding under the
// same schema.
//
//   php -d extension=target/release/libinfer.so bench/sampling.php MODEL [THREADS] [ROUNDS] [--schema-only]
//
// --schema-only measures the schema part alone (it runs on builds from
// before these options, to compare the grammar check with its earlier form).
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

$model_path = $argv[1] ?? exit("usage: bench/sampling.php MODEL [THREADS] [ROUNDS]\n");
$threads = (int) ($argv[2] ?? 2);
$rounds = (int) ($argv[3] ?? 5);
$model = Model::load($model_path, ['n_threads' => $threads]);
$prompt = Prompt::user('Write a long story about a lighthouse keeper who finds a message in a bottle.');
$max = 96;
$temperature = 0.8;

$settings = [
    'default chain' => [],
    'logprobs, top 0' => ['logprobs' => true],
    'logprobs, top 5' => ['logprobs' => true, 'top_logprobs' => 5],
    'logprobs, top 20' => ['logprobs' => true, 'top_logprobs' => 20],
    'post-sampling probs, top 20' => ['logprobs' => true, 'top_logprobs' => 20, 'post_sampling_probs' => true],
    'penalties (repeat, presence, frequency)' => ['repeat_penalty' => 1.1, 'presence_penalty' => 0.3, 'frequency_penalty' => 0.3],
    'DRY' => ['dry_multiplier' => 0.8],
    'XTC' => ['xtc_probability' => 0.5, 'xtc_threshold' => 0.1],
    'typical-p 0.9' => ['typical_p' => 0.9],
    'top-n-sigma 1' => ['top_n_sigma' => 1.0],
    'dynatemp' => ['dynatemp_range' => 0.5],
    'mirostat 2' => ['mirostat' => 2],
    'logit_bias (10 tokens)' => ['logit_bias' => array_fill_keys(range(1000, 1009), -2.0)],
    'adaptive-p (target 0.3)' => ['samplers' => ['penalties', 'dry', 'top_n_sigma', 'top_k', 'typ_p', 'top_p', 'min_p', 'xtc', 'temperature', 'adaptive_p'], 'adaptive_target' => 0.3],
    'samplers: top_k, temperature only' => ['samplers' => ['top_k', 'temperature']],
    'ignore_eos' => ['ignore_eos' => true],
];

$schema_only = in_array('--schema-only', $argv, true);
$per_token = [];
$names = $schema_only ? [] : array_keys($settings);
for ($round = 0; $round <= $rounds && $names !== []; $round++) {
    $order = array_merge(array_slice($names, $round % count($names)), array_slice($names, 0, $round % count($names)));
    foreach ($order as $name) {
        $r = $model->chat($prompt, maxTokens: $max, temperature: $temperature, seed: 100 + $round,
            options: $settings[$name] + ['cache_prompt' => false]);
        if ($round > 0) {   // round 0 warms up
            $t = $r->timings();
            $per_token[$name][] = $t['generation_ms'] / max(1, $r->tokensGenerated());
        }
    }
}

if (!$schema_only) {
$base = median($per_token['default chain']);
printf("## Samplers and log-probabilities: %s, %d threads, temperature %.1f, %d tokens, %d rounds\n\n",
    basename($model_path), $threads, $temperature, $max, $rounds);
echo "| setting | ms per token | against the default chain |\n|---|--:|--:|\n";
foreach ($names as $name) {
    $m = median($per_token[$name]);
    printf("| %s | %.2f | %.3f× |\n", $name, $m, $m / $base);
}
}

// Drawing under a schema: the exact check (mask and draw again on every
// refusal) against greedy decoding under the same schema.
$schema = ['type' => 'object', 'required' => ['name', 'city', 'hobbies'], 'additionalProperties' => false, 'properties' => [
    'name' => ['type' => 'string'], 'city' => ['type' => 'string'],
    'hobbies' => ['type' => 'array', 'maxItems' => 4, 'items' => ['type' => 'string']],
]];
$person = Prompt::user('Invent a person: a name, a city and a few hobbies.');
$modes = ['greedy' => 0.0, 'drawing (temperature 0.8)' => 0.8];
$ms = [];
for ($round = 0; $round <= $rounds; $round++) {
    foreach (($round % 2 ? array_reverse($modes, true) : $modes) as $mode => $t) {
        $r = $model->chat($person, maxTokens: 80, temperature: $t, seed: 7 + $round,
            options: ['schema' => $schema, 'cache_prompt' => false]);
        if ($round > 0) {
            $timings = $r->timings();
            $ms[$mode][] = $timings['generation_ms'] / max(1, $timings['sampled_tokens']);
        }
    }
}
echo "\n| under a schema | ms per sampled token | against greedy |\n|---|--:|--:|\n";
foreach ($modes as $mode => $_) {
    printf("| %s | %.2f | %.3f× |\n", $mode, median($ms[$mode]), median($ms[$mode]) / median($ms['greedy']));
}
