<?php
// The prompt store shared by the processes of a machine. Run it twice:
//
//   php -d extension=target/release/libinfer.so \
//       -d infer.prompt_cache_dir=/dev/shm/infer-prompts-$USER examples/shared-prompts.php
//
// The first run evaluates each system prompt and stores it; the second (a
// new process, as a PHP-FPM worker would be) starts from the stored ones.

declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

$model = Model::load($argv[1] ?? 'models/SmolLM2-135M-Instruct.Q4_1.gguf');
$desks = [
    'invoices' => Prompt::system(str_repeat('You extract invoice data and answer in JSON. ', 25)),
    'tickets' => Prompt::system(str_repeat('You classify support tickets by urgency. ', 25)),
];
$store = ini_get('infer.prompt_cache_dir') ?: '(off: set infer.prompt_cache_dir)';
echo "store: $store, pid ", getmypid(), "\n";
foreach ($desks as $name => $desk) {
    $r = $model->chat($desk->withUser('Run ' . getmypid() . '.'), maxTokens: 4);
    $t = $r->timings();
    printf("%-8s %3d of %3d prompt tokens from %-6s prompt %4.0f ms\n", $name, $t['cached_tokens'],
        $r->promptTokens(), $t['cache'], $t['prompt_ms']);
}
