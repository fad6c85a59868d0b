<?php

/**
 * A misbehaving HTTP server for the fault-injection tests of
 * Model::connect(): it answers GET /props, GET /v1/models and POST /tokenize
 * as llama-server does (so connect() and the prompt's tokenization work) and
 * then fails POST /completion the way MODE says:
 *   hang       accept the request and never answer
 *   garbage    200 with an event that is not JSON
 *   error500   HTTP 500 with llama-server's error body
 *   truncated  two events, then close without the final one
 *   busy503    HTTP 503 to the first completion, then a normal reply
 *   html       GET /props answers an HTML page (not a serving engine)
 *   keepalive  one token, then a `: keep-alive` comment every 0.5 s for a minute
 *   dripprops  GET /props answered a byte a second
 *   huge       POST /tokenize and /embeddings answer 400 MB, as fast as the client reads
 *   forbidden  every request answers HTTP 403 with a long HTML page holding control characters
 *   bigcount   a final event claiming 4294967295 tokens generated and more cached than the prompt
 * The modes past html are the attacks of issue 61: each must end within its clock, or at its limit.
 * Usage: php fake-server.php PORT MODE [DELAY_MS]; it listens after
 * DELAY_MS (to test retries of a refused connection).
 */

declare(strict_types=1);

[$_, $port, $mode] = $argv;
$delay = (int) ($argv[3] ?? 0);
usleep($delay * 1000);
$server = stream_socket_server("tcp://127.0.0.1:$port", $errno, $errstr);
if ($server === false) {
    fwrite(STDERR, "listen: $errstr\n");
    exit(1);
}

$props = json_encode([
    'default_generation_settings' => ['n_ctx' => 2048, 'params' => []],
    'total_slots' => 1,
    'chat_template' => "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n",
    'bos_token' => '<|im_start|>',
    'eos_token' => '<|im_end|>',
]);
$models = json_encode(['object' => 'list', 'data' => [
    ['id' => 'fake.gguf', 'object' => 'model', 'owned_by' => 'llamacpp', 'meta' => ['n_ctx_train' => 8192]],
]]);
$completions = 0;
$held = [];

function respond($conn, int $status, string $body, string $type = 'application/json'): void
{
    $reason = [200 => 'OK', 404 => 'Not Found', 500 => 'Internal Server Error', 503 => 'Service Unavailable'][$status] ?? 'Status';
    fwrite($conn, "HTTP/1.1 $status $reason\r\nContent-Type: $type\r\nContent-Length: " . strlen($body)
        . "\r\nConnection: close\r\n\r\n$body");
    fclose($conn);
}

function events($conn, string $events, bool $close = true): void
{
    fwrite($conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n$events");
    fflush($conn);
    if ($close) {
        fclose($conn);
    }
}

/** A 200 JSON answer of 400 MB that starts with $prefix, until the client stops reading. */
function huge($conn, string $prefix): void
{
    $size = 400 << 20;
    fwrite($conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: $size\r\nConnection: close\r\n\r\n$prefix");
    $chunk = str_repeat('1,', 1 << 19);
    for ($sent = strlen($prefix); $sent < $size && @fwrite($conn, $chunk) !== false; $sent += strlen($chunk)) {
    }
    fclose($conn);
}

/** $body a byte a second. */
function drip($conn, string $body): void
{
    fwrite($conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " . strlen($body) . "\r\nConnection: close\r\n\r\n");
    foreach (str_split($body) as $byte) {
        sleep(1);
        if (@fwrite($conn, $byte) === false) {
            break;
        }
    }
    fclose($conn);
}

/** One token, then a keep-alive comment every 0.5 s for a minute. */
function keepalive($conn): void
{
    events($conn, "data: {\"content\":\"Hel\",\"stop\":false}\n\n", false);
    for ($i = 0; $i < 120 && @fwrite($conn, ": keep-alive\n\n") !== false; $i++) {
        fflush($conn);
        usleep(500000);
    }
    fclose($conn);
}

/** One event line that does not end: 1 MiB at a time, until the client stops reading (at most 64 MiB). */
function endless($conn): void
{
    fwrite($conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ");
    $chunk = str_repeat('x', 1 << 20);
    for ($i = 0; $i < 64 && @fwrite($conn, $chunk) !== false; $i++) {
    }
    fclose($conn);
}

while ($conn = @stream_socket_accept($server, -1)) {
    // A TLS client's first byte is a handshake record (0x16): this server
    // speaks plain HTTP only, and answers it in plain text.
    $first = fread($conn, 1);
    if ($first === "\x16") {
        fwrite($conn, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        fclose($conn);
        continue;
    }
    $head = (string) $first;
    while (!str_contains($head, "\r\n\r\n") && ($line = fgets($conn)) !== false) {
        $head .= $line;
    }
    [$method, $path] = explode(' ', $head) + [1 => '/'];
    $length = preg_match('/content-length: *(\d+)/i', $head, $m) ? (int) $m[1] : 0;
    $body = $length > 0 ? stream_get_contents($conn, $length) : '';
    // Each slow answer in a child of its own, so that the next connection is accepted.
    $slow = ($mode === 'keepalive' && $path === '/completion') || ($mode === 'dripprops' && $path === '/props')
        || ($mode === 'huge' && ($path === '/tokenize' || $path === '/embeddings'));
    if ($slow && function_exists('pcntl_fork') && pcntl_fork() !== 0) {
        fclose($conn);
        continue;
    }
    if ($mode === 'forbidden') {
        $page = "<html><head><title>403 Forbidden</title></head>\n<body>\x07<h1>Forbidden</h1>"
            . str_repeat("<p>internal path /srv/app/secret.conf</p>\r\n", 200) . '</body></html>';
        respond($conn, 403, $page, 'text/html');
    } elseif ($slow) {
        match ($mode) {
            'keepalive' => keepalive($conn),
            'dripprops' => drip($conn, $props),
            'huge' => huge($conn, $path === '/tokenize' ? '{"tokens":[' : '[{"index":0,"embedding":['),
        };
        exit(0);
    } elseif ($path === '/props' && $mode === 'html') {
        respond($conn, 200, '<html><body>It works!</body></html>', 'text/html');
    } elseif ($path === '/props') {
        respond($conn, 200, $props);
    } elseif ($path === '/v1/models') {
        respond($conn, 200, $models);
    } elseif ($path === '/tokenize') {
        respond($conn, 200, '{"tokens":[1,2,3]}');
    } elseif ($path === '/completion') {
        $completions++;
        match ($mode) {
            'hang' => $held[] = $conn,
            'garbage' => events($conn, "data: this is not JSON\n\n"),
            'error500' => respond($conn, 500, '{"error":{"code":500,"message":"the slot crashed","type":"server_error"}}'),
            'truncated' => events($conn, "data: {\"content\":\"Hel\",\"stop\":false}\n\ndata: {\"content\":\"lo\",\"stop\":false}\n\n"),
            'endless' => endless($conn),
            'bigcount' => events($conn, "data: {\"content\":\"ok\",\"stop\":true,\"stop_type\":\"limit\",\"tokens_predicted\":4294967295,\"tokens_evaluated\":3}\n\n"),
            'busy503' => $completions === 1
                ? respond($conn, 503, '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}')
                : events($conn, "data: {\"content\":\"ok\",\"stop\":false}\n\ndata: {\"content\":\"\",\"stop\":true,\"stop_type\":\"eos\",\"tokens_predicted\":2,\"tokens_evaluated\":3}\n\n"),
            default => respond($conn, 404, '{"error":{"message":"unknown mode"}}'),
        };
    } else {
        respond($conn, 404, '{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}');
    }
}
