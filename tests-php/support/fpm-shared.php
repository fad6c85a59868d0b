<?php
// The script PHP-FPM and `php -S` run for SharedServerTest: one call on the
// installation's shared server per request, chosen by ?case=, answered as
// JSON with the worker's pid and the server's.

declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

header('Content-Type: application/json');
$case = (string) ($_GET['case'] ?? '');
$out = ['case' => $case, 'worker' => getmypid()];
try {
    $model = Model::load((string) getenv('INFER_MODEL'), ['shared' => true]);
    $out['server_pid'] = $model->info()['server_pid'] ?? null;
    switch ($case) {
        case 'chat':
            $out['text'] = $model->chat(Prompt::user('Name a fruit.'), 16)->text();
            break;
        case 'schema':
            $schema = ['type' => 'object', 'properties' => ['fruit' => ['type' => 'string', 'maxLength' => 20]], 'required' => ['fruit']];
            $out['text'] = $model->chat(Prompt::user('Name a fruit.'), 32, options: ['schema' => $schema])->text();
            break;
        case 'stream':
            $stream = $model->stream(Prompt::user('Name a fruit.'), 16);
            $out['pieces'] = [];
            foreach ($stream as $piece) {
                $out['pieces'][] = $piece;
            }
            $out['text'] = $stream->text();
            break;
        default:
            throw new InvalidArgumentException('unknown case');
    }
} catch (Throwable $e) {
    $out['error'] = get_class($e) . ': ' . $e->getMessage();
}
echo json_encode($out, JSON_INVALID_UTF8_SUBSTITUTE);
