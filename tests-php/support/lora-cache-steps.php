<?php

// Calls on one model loaded with the test adapter (named "banana"), in the
// order argv[3] lists them (a JSON list of [set, question], set "base" or a
// scale), each with the caches on; print one JSON line per call: its text,
// the log-probabilities of its tokens, the prompt tokens taken from a cache
// and where from. The caches (infer.prompt_cache_mb, infer.prompt_cache_dir)
// are the caller's -d settings.

declare(strict_types=1);

use Displace\Infer\Model;
use Displace\Infer\Prompt;

$model = Model::load($argv[1], ['lora' => [['path' => $argv[2], 'name' => 'banana']]]);
foreach (json_decode($argv[3], true, flags: JSON_THROW_ON_ERROR) as [$set, $question]) {
    $prompt = Prompt::system(str_repeat('You are a careful assistant who answers briefly and plainly. ', 6))->withUser($question);
    $r = $model->chat($prompt, maxTokens: 8, options: [
        'lora' => $set === 'base' ? [] : ['banana' => (float) $set], 'logprobs' => true,
    ]);
    echo json_encode([
        'text' => $r->text(),
        'logprobs' => array_column($r->logprobs(), 'logprob'),
        'cached' => $r->cachedTokens(),
        'cache' => $r->timings()['cache'],
    ]), "\n";
}
