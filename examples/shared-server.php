<?php
// One llama-server for every PHP process of an installation. In php.ini (or
// with -d, as here):
//
//   php -d extension=target/release/libinfer.so \
//       -d infer.server_model=$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf \
//       -d infer.server_binary=$PWD/target/llama-server/bin/llama-server \
//       examples/shared-server.php models/SmolLM2-135M-Instruct.Q4_1.gguf
//
// The first process that loads the model with 'shared' => true starts the
// server (a second or so); the next ones, PHP-FPM workers or scripts, find it
// running and send their calls there, where they are decoded together.

declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

$path = $argv[1] ?? 'models/SmolLM2-135M-Instruct.Q4_1.gguf';
$begin = microtime(true);
$model = Model::load($path, ['shared' => true]);
$loaded = (microtime(true) - $begin) * 1000;
$info = $model->info();
printf("pid %d: shared server pid %d at %s (load %.0f ms)\n", getmypid(), $info['server_pid'], $info['url'], $loaded);
$reply = $model->chat(Prompt::user('Extract the city: "I flew to Lisbon on Monday."'), maxTokens: 24, options: [
    'schema' => ['type' => 'object', 'properties' => ['city' => ['type' => 'string']], 'required' => ['city']],
]);
echo $reply->text(), "\n";
