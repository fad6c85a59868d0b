<?php
// The cost of thread safety on one request: the same chat (64 tokens,
// greedy, the machine's threads) in the CLI of PHP 8.3 built thread-safe and
// not (make php83 php83-zts, each with its own build of the extension),
// alternating between the two for ROUNDS rounds in one run; each round is a
// fresh process that loads the model, warms up once and times 5 chats.
//
//   php bench/zts_cost.php MODEL NTS_PHP NTS_EXT ZTS_PHP ZTS_EXT [ROUNDS]
//
// make bench-zts runs it with target/php-8.3{,-zts}.
declare(strict_types=1);

require __DIR__ . '/support.php';

if (($argv[1] ?? '') === '--child') {
    $model = Displace\Infer\Model::load($argv[2]);
    $prompt = Displace\Infer\Prompt::user('Write a short poem about the sea.');
    $model->chat($prompt, maxTokens: 64);
    $times = [];
    for ($i = 0; $i < 5; $i++) {
        $t = hrtime(true);
        $r = $model->chat($prompt, maxTokens: 64);
        $times[] = (hrtime(true) - $t) / 1e6;
    }
    echo json_encode(['ms' => median($times), 'tokens' => $r->tokensGenerated(), 'zts' => PHP_ZTS, 'text' => $r->text()]), "\n";
    exit(0);
}

[$script, $model, $ntsPhp, $ntsExt, $ztsPhp, $ztsExt] = $argv + array_fill(0, 6, '');
$rounds = (int) ($argv[6] ?? 6);
foreach ([$model, $ntsPhp, $ntsExt, $ztsPhp, $ztsExt] as $file) {
    if (!is_file($file)) {
        fwrite(STDERR, "usage: bench/zts_cost.php MODEL NTS_PHP NTS_EXT ZTS_PHP ZTS_EXT [ROUNDS]\n");
        exit(2);
    }
}
$runs = ['nts' => [], 'zts' => []];
$texts = [];
for ($round = 0; $round < $rounds; $round++) {
    // Rotated: neither build always runs first.
    $order = $round % 2 === 0 ? ['nts', 'zts'] : ['zts', 'nts'];
    foreach ($order as $kind) {
        [$php, $ext] = $kind === 'nts' ? [$ntsPhp, $ntsExt] : [$ztsPhp, $ztsExt];
        $out = shell_exec(escapeshellarg($php) . ' -n -d extension=' . escapeshellarg($ext) . ' ' . escapeshellarg(__FILE__) . ' --child ' . escapeshellarg($model));
        $r = json_decode((string) $out, true);
        if (!is_array($r) || $r['zts'] !== ($kind === 'zts' ? 1 : 0)) {
            fwrite(STDERR, "$kind round $round failed: $out\n");
            exit(1);
        }
        $runs[$kind][] = $r['ms'];
        $texts[$kind] = $r['text'];
    }
}
$nts = median($runs['nts']);
$zts = median($runs['zts']);
printf("%s, 64 tokens, %d rounds: NTS %.1f ms, ZTS %.1f ms, ZTS/NTS %.3fx; same text: %s\n", basename($model), $rounds, $nts, $zts, $zts / $nts, $texts['nts'] === $texts['zts'] ? 'yes' : 'NO');
