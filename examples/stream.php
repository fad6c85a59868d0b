<?php
// Streaming in the terminal: the reply appears piece by piece as the model
// generates it; Ctrl-C or a `break` stops it at once.
//
//   php -d extension=target/release/libinfer.so examples/stream.php "Tell me about Lisbon."
declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

$path = getenv('INFER_MODEL') ?: __DIR__ . '/../models/SmolLM2-135M-Instruct.Q4_1.gguf';
$model = Model::load($path);
$question = $argv[1] ?? 'Tell me about Lisbon in three sentences.';

$stream = $model->stream(Prompt::user($question), maxTokens: 200);
$started = microtime(true);
$first = null;
foreach ($stream as $part => $piece) {
    $first ??= microtime(true) - $started;
    echo $part === 'reasoning' ? "\033[2m$piece\033[0m" : $piece; // reasoning dimmed
    flush();
}
$response = $stream->response();
printf(
    "\n(first piece after %.0f ms; %d tokens in %.2f s, finish: %s)\n",
    ($first ?? 0) * 1000,
    $response->tokensGenerated(),
    microtime(true) - $started,
    $response->finishReason(),
);
