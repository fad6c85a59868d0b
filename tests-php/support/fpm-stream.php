<?php
// The script PHP-FPM runs for StreamTest: streams a chat reply from a
// persistent model, one JSON line per piece, each flushed to the client.
//
//   ?q=        the question; ?max= maxTokens
//   ?marker=   a file the client creates once it has read the first piece:
//              the worker waits for it (up to 20 s) before it generates on,
//              and reports whether it came
//   ?progress= a file that gets one byte per piece generated (a client that
//              goes away cannot read the pieces)
//   ?limit=    set_time_limit() before streaming

declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

header('Content-Type: application/x-ndjson');
$line = static function (array $value): void {
    echo json_encode($value), "\n";
    flush();
};
$line(['pid' => getmypid()]);
if (isset($_GET['limit'])) {
    set_time_limit((int) $_GET['limit']);
}
$model = Model::load((string) getenv('INFER_MODEL'), ['persistent' => true]);
$stream = $model->stream(Prompt::user((string) $_GET['q']), maxTokens: (int) $_GET['max'], nCtx: 4096);
$seen = null;
foreach ($stream as $part => $piece) {
    if (isset($_GET['progress'])) {
        file_put_contents((string) $_GET['progress'], '.', FILE_APPEND);
    }
    $line([$part, $piece]);
    if ($seen === null && isset($_GET['marker'])) {
        $deadline = microtime(true) + 20;
        while (!($seen = file_exists((string) $_GET['marker'])) && microtime(true) < $deadline) {
            usleep(2000);
        }
    }
}
$response = $stream->response();
$line([
    'text' => $response->text(),
    'finish' => $response->finishReason(),
    'prompt' => $response->promptTokens(),
    'cached' => $response->cachedTokens(),
    'marker_seen' => $seen,
]);
