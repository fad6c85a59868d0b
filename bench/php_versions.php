<?php
// PHP 8.4 against PHP 8.2, the same build of the extension for each (make
// build, make build PHP=8.4), same model, same threads: a warm single chat
// (16 greedy tokens) and the extraction example (examples/extraction.php,
// eight notes in turn, prompt cache on as by default). Each PHP runs in a
// process of its own, in alternating blocks; medians per call.
//
//   php -d extension=target/release/libinfer.so bench/php_versions.php MODEL [BLOCKS]
//
// (bench/php_versions.php --child MODEL runs one block and prints JSON.)
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};


if (($argv[1] ?? '') === '--child') {
    require __DIR__ . '/../examples/extraction.php';
    $model = Model::load($argv[2], ['n_threads' => 2]);
    $chat = fn () => $model->chat(Prompt::user('What is the capital of France?'), maxTokens: 16, options: ['cache_prompt' => false]);
    $chat();
    $single = [];
    for ($i = 0; $i < 9; $i++) {
        $single[] = ms($chat)[0];
    }
    extract_person($model, NOTES[0]);
    $extract = [];
    for ($i = 0; $i < 16; $i++) {
        $extract[] = ms(fn () => extract_person($model, NOTES[$i % count(NOTES)]))[0];
    }
    echo json_encode(['php' => PHP_VERSION, 'single' => $single, 'extract' => $extract]), "\n";
    exit(0);
}

$model = $argv[1] ?? '';
$blocks = (int) ($argv[2] ?? 3);
if (!is_file($model)) {
    fwrite(STDERR, "usage: php bench/php_versions.php MODEL [BLOCKS]\n");
    exit(2);
}
$root = dirname(__DIR__);
$commands = [
    '8.2' => [PHP_BINARY, '-d', "extension=$root/target/release/libinfer.so", __FILE__, '--child', $model],
    '8.4' => ['bash', "$root/scripts/in-php84.sh", 'php', '-d', "extension=$root/target/php-8.4/infer.so", __FILE__, '--child', $model],
];
$runs = ['8.2' => ['single' => [], 'extract' => []], '8.4' => ['single' => [], 'extract' => []]];
$versions = [];
for ($b = 0; $b < $blocks; $b++) {
    foreach ($commands as $php => $cmd) {
        $row = child_json($cmd, $root);
        $versions[$php] = $row['php'];
        array_push($runs[$php]['single'], ...$row['single']);
        array_push($runs[$php]['extract'], ...$row['extract']);
    }
}
echo "| figure (median per call) | PHP {$versions['8.2']} | PHP {$versions['8.4']} | 8.4 / 8.2 |\n|---|--:|--:|--:|\n";
foreach (['single' => 'warm chat, 16 tokens, prompt cache off', 'extract' => 'extraction example, 8 notes in turn'] as $k => $what) {
    $a = median($runs['8.2'][$k]);
    $c = median($runs['8.4'][$k]);
    printf("| %s | %.1f ms | %.1f ms | %.3f |\n", $what, $a, $c, $c / $a);
}
