<?php
// A JSON extraction endpoint for PHP-FPM (or `php -S`): GET ?note=... answers
// {"data": {...}, "cached": n, "pid": n}. The model stays loaded in the worker
// between requests ('persistent' => true), so a request pays neither the load
// nor the system prompt again; ?persistent=0 loads it per request instead
// (the comparison bench/fpm_endpoint.php makes), and ?examples=0 leaves the
// worked examples out of the system prompt.
//
//   php -d extension=target/release/libinfer.so -S 127.0.0.1:8080 examples/extract-endpoint.php
//   curl '127.0.0.1:8080/?note=Maria+is+31+and+lives+in+Lisbon.'
declare(strict_types=1);

require __DIR__ . '/extraction.php';

use Displace\Infer\{InferException, Model};

header('Content-Type: application/json');
try {
    $path = getenv('INFER_MODEL') ?: __DIR__ . '/../models/SmolLM2-135M-Instruct.Q4_1.gguf';
    $model = Model::load($path, ['persistent' => ($_GET['persistent'] ?? '1') !== '0']);
    $response = extract_person($model, (string) ($_GET['note'] ?? ''), ($_GET['examples'] ?? '1') !== '0');
    echo json_encode(['data' => $response->json(), 'cached' => $response->cachedTokens(), 'pid' => getmypid()]);
} catch (InferException $e) {
    http_response_code(500);
    echo json_encode(['error' => $e->getMessage()]);
}
