<?php
// The same code against a serving engine: Model::connect() instead of Model::load(). Without a URL it starts the
// llama-server that `make llama-server` builds, on a loopback port, with the default model, and stops it after.
//
//   php -d extension=target/release/libinfer.so examples/remote.php [BASE_URL]
declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

$server = null;
$url = $argv[1] ?? null;
if ($url === null) {
    $root = dirname(__DIR__);
    $binary = getenv('INFER_LLAMA_SERVER') ?: "$root/target/llama-server/bin/llama-server";
    $modelPath = getenv('INFER_MODEL') ?: "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf";
    $probe = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
    fclose($probe);
    $server = proc_open([$binary, '-m', $modelPath, '--host', '127.0.0.1', '--port', (string) $port, '-fa', 'off', '-c', '4096'],
        [1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
    $url = "http://127.0.0.1:$port";
    for ($i = 0; $i < 300 && !str_contains((string) @file_get_contents("$url/health"), 'ok'); $i++) {
        usleep(100000);
    }
}

try {
    $model = Model::connect($url, ['timeout' => 30]);
    $r = $model->chat(
        Prompt::system('Extract the data. Output JSON only.')->withUser('Maria is 31 years old and lives in Lisbon.'),
        options: ['schema' => ['type' => 'object', 'properties' => [
            'name' => ['type' => 'string'], 'age' => ['type' => 'integer'], 'city' => ['type' => 'string'],
        ]]],
    );
    echo "served by $url: ", json_encode($r->json()), " ({$r->finishReason()}, {$r->tokensGenerated()} tokens)\n";
    foreach ($model->stream(Prompt::user('Name three colours.'), maxTokens: 24) as $piece) {
        echo $piece;
    }
    echo "\n";
} finally {
    if ($server !== null) {
        proc_terminate($server);
        proc_close($server);
    }
}
