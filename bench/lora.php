<?php
// What a LoRA adapter costs (issue 52), in one run, interleaved, medians of
// ROUNDS:
//
// 1. Per generated token and per prompt token: a model loaded with the
//    adapter, each call at scale 1, against the same file loaded without
//    adapters (two models, each keeping its own context: no switching).
// 2. Switching the adapter set between calls of one model: a call whose set
//    differs from its context's last (set_adapters + the graph reserved
//    again on the next evaluation) against a call under the same set, both
//    evaluating the whole prompt (cache_prompt off, so the only difference
//    is the switch); and against loading the model with the adapter again
//    (what switching would cost without per-call adapters); and on a model
//    loaded with 'lora_contexts' => 2, which keeps a context per set, so
//    that a call under the other set switches nothing. With
//    LLAMA_SERVER, the same pair of requests to llama-server started with
//    `--lora` (per-request `lora` scales 0 and 1): the baseline, whose slots
//    share one context and so pay the same when the set changes.
//
//   php -d extension=target/release/libinfer.so bench/lora.php MODEL ADAPTER [THREADS] [ROUNDS] [LLAMA_SERVER]
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\Model;

$model_path = $argv[1] ?? exit("usage: bench/lora.php MODEL ADAPTER [THREADS] [ROUNDS]\n");
$adapter = $argv[2] ?? exit("usage: bench/lora.php MODEL ADAPTER [THREADS] [ROUNDS]\n");
$threads = (int) ($argv[3] ?? 2);
$rounds = (int) ($argv[4] ?? 7);
$server_binary = $argv[5] ?? null;
$load = ['n_threads' => $threads];
$with = ['lora' => [['path' => $adapter, 'name' => 'a']]];

$base = Model::load($model_path, $load);
$adapted = Model::load($model_path, $load + $with);
$prompt = Displace\Infer\Prompt::system(str_repeat('You are a writer of long, detailed stories. ', 8))
    ->user('Write a long story about a lighthouse keeper who finds a message in a bottle.');
$max = 64;

// 1. Per token.
$runs = ['base model (no adapters)' => [$base, []], 'adapter at scale 1' => [$adapted, ['lora' => ['a' => 1.0]]]];
$gen = $eval = [];
for ($round = 0; $round <= $rounds; $round++) {
    foreach ($round % 2 ? array_reverse($runs, true) : $runs as $name => [$model, $options]) {
        $resp = $model->chat($prompt, maxTokens: $max, options: $options + ['cache_prompt' => false]);
        if ($round > 0) {
            $t = $resp->timings();
            $gen[$name][] = $t['generation_ms'] / max(1, $resp->tokensGenerated());
            $eval[$name][] = $t['prompt_ms'] / max(1, $resp->promptTokens());
        }
    }
}
printf("## LoRA: %s with %s, %d threads, %d rounds\n\n", basename($model_path), basename($adapter), $threads, $rounds);
echo "| run | ms per generated token | against the base | ms per prompt token | against the base |\n|---|--:|--:|--:|--:|\n";
$g0 = median($gen['base model (no adapters)']);
$e0 = median($eval['base model (no adapters)']);
foreach (array_keys($runs) as $name) {
    $g = median($gen[$name]);
    $e = median($eval[$name]);
    printf("| %s | %.2f | %.3f× | %.3f | %.3f× |\n", $name, $g, $g / $g0, $e, $e / $e0);
}

// 2. Switching: the same short call, under the set of the call before or
// under the other one; on the model with one context (the default) and on
// one that keeps a context per set ('lora_contexts' => 2).
$short = 'Name a fruit.';
$sets = [[], ['a' => 1.0]];
$switching = static function (Model $model) use ($short, $sets, $rounds): array {
    $call = static function (array $set) use ($model, $short): float {
        $t = hrtime(true);
        $model->raw($short, maxTokens: 1, options: ['lora' => $set, 'cache_prompt' => false]);
        return (hrtime(true) - $t) / 1e6;
    };
    $same = $switch = [];
    for ($round = 0; $round <= $rounds * 3; $round++) {
        $set = $sets[$round % 2];
        $call($set);                       // the context now applies $set
        $s = $call($set);                  // same set
        $w = $call($sets[1 - $round % 2]); // another set: a switch
        if ($round > 0) {
            $same[] = $s;
            $switch[] = $w;
        }
    }
    return [median($same), median($switch)];
};
$per_set = Model::load($model_path, $load + $with + ['lora_contexts' => 2]);
$results = [];
for ($pass = 0; $pass < 2; $pass++) {
    // Interleaved in two passes, so that both see the machine as it is.
    foreach (['one context (default)' => $adapted, "a context per set ('lora_contexts' => 2)" => $per_set] as $name => $model) {
        $results[$name][] = $switching($model);
    }
}
$reload = [];
for ($round = 0; $round <= $rounds; $round++) {
    $t = hrtime(true);
    $m = Model::load($model_path, $load + $with);
    $m->raw($short, maxTokens: 1, options: ['cache_prompt' => false]);
    $ms = (hrtime(true) - $t) / 1e6;
    unset($m);
    if ($round > 0) {
        $reload[] = $ms;
    }
}
printf("\n## Switching adapters between calls of one model (a %d-token prompt, 1 token, whole prompt evaluated each call)\n\n",
    $adapted->countTokens($short) + 1);
echo "| model | under the set of the call before (ms) | under another set (ms) | **switch cost** (the difference, ms) |\n|---|--:|--:|--:|\n";
foreach ($results as $name => $passes) {
    $s = median(array_column($passes, 0));
    $w = median(array_column($passes, 1));
    printf("| %s | %.2f | %.2f | **%.2f** |\n", $name, $s, $w, $w - $s);
}
echo "\n| | ms (median) |\n|---|--:|\n";
printf("| loading the model with the adapter again, then the call | %.2f |\n", median($reload));

if ($server_binary !== null) {
    [$process, $url] = start_server($server_binary, $model_path, 1, $threads, ['--lora', $adapter]);
    $post = static function (float $scale) use ($url, $short): float {
        $body = json_encode(['prompt' => $short, 'n_predict' => 1, 'cache_prompt' => false, 'temperature' => 0,
            'lora' => [['id' => 0, 'scale' => $scale]]]);
        $t = hrtime(true);
        $answer = file_get_contents("$url/completion", false, stream_context_create(['http' => [
            'method' => 'POST', 'header' => "Content-Type: application/json\r\n", 'content' => $body]]));
        if ($answer === false) {
            throw new RuntimeException('llama-server did not answer');
        }
        return (hrtime(true) - $t) / 1e6;
    };
    $same = $switch = [];
    for ($round = 0; $round <= $rounds * 3; $round++) {
        $scale = (float) ($round % 2);
        $post($scale);
        $s = $post($scale);
        $w = $post(1.0 - $scale);
        if ($round > 0) {
            $same[] = $s;
            $switch[] = $w;
        }
    }
    stop_server($process);
    printf("\n## The same with llama-server --lora (one slot; per-request lora scales 0 and 1; HTTP included in both)\n\n");
    echo "| request | ms (median) |\n|---|--:|\n";
    printf("| under the set of the request before | %.2f |\n", median($same));
    printf("| under another set (a switch) | %.2f |\n", median($switch));
    printf("| **switch cost** (the difference) | **%.2f** |\n", median($switch) - median($same));
}
