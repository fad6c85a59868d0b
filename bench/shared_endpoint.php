<?php
// The endpoint bench/shared_server.php drives under PHP-FPM: one chat per
// request on the model named by INFER_MODEL, loaded persistent in the worker
// (?mode=inproc) or from the installation's shared server (?mode=shared);
// answered as JSON with the tokens generated and the worker's pid.

declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

header('Content-Type: application/json');
$mode = (string) ($_GET['mode'] ?? '');
$i = (int) ($_GET['i'] ?? 0);
$max = (int) ($_GET['max'] ?? 64);
$topics = ['the sea', 'a library', 'mountains', 'a small town', 'rain', 'a kitchen', 'trains', 'the moon'];
try {
    $model = Model::load((string) getenv('INFER_MODEL'), match ($mode) {
        'inproc' => ['persistent' => true],
        'shared' => ['shared' => true],
    });
    $r = $model->chat(Prompt::user('Write a short story about ' . $topics[$i % count($topics)] . '.'), $max, 2048);
    echo json_encode(['tokens' => $r->tokensGenerated(), 'pid' => getmypid(), 'server_pid' => $model->info()['server_pid'] ?? null]);
} catch (Throwable $e) {
    echo json_encode(['error' => get_class($e) . ': ' . $e->getMessage()]);
}
