<?php
// A streaming chat endpoint for PHP-FPM (or `php -S`): GET ?q=... answers with
// Server-Sent Events, one event per piece as the model generates it, then a
// `done` event with the finish reason and counts. The model stays loaded in
// the worker between requests. A client that goes away ends the script at
// the next piece (PHP's ignore_user_abort is off by default), and the model
// is free and consistent for the next request; ?timeout= bounds the
// generation in seconds.
//
//   php -d extension=target/release/libinfer.so -S 127.0.0.1:8080 examples/stream-endpoint.php
//   curl -N '127.0.0.1:8080/?q=Tell+me+about+Lisbon.'
//
// In the browser: new EventSource('/?q=...').addEventListener('answer', e => ...JSON.parse(e.data)...).
declare(strict_types=1);

use Displace\Infer\{InferException, Model, Prompt};

header('Content-Type: text/event-stream');
header('Cache-Control: no-cache');
header('X-Accel-Buffering: no'); // nginx: pass each event on at once
while (ob_get_level() > 0) {
    ob_end_flush();
}

$event = static function (string $name, mixed $data): void {
    echo "event: $name\ndata: ", json_encode($data), "\n\n";
    flush();
};
try {
    $path = getenv('INFER_MODEL') ?: __DIR__ . '/../models/SmolLM2-135M-Instruct.Q4_1.gguf';
    $model = Model::load($path, ['persistent' => true]);
    $prompt = Prompt::system('You are a helpful assistant.')->withUser((string) ($_GET['q'] ?? 'Say hello.'));
    $timeout = (float) ($_GET['timeout'] ?? 30);
    $stream = $model->stream($prompt, maxTokens: 256, options: ['timeout' => $timeout]);
    foreach ($stream as $part => $piece) {
        $event($part, $piece); // 'answer', or 'reasoning' inside <think>
    }
    $response = $stream->response();
    $event('done', [
        'finish' => $response->finishReason(),
        'tokens' => $response->tokensGenerated(),
        'cached' => $response->cachedTokens(),
    ]);
} catch (InferException $e) {
    $event('error', $e->getMessage());
}
