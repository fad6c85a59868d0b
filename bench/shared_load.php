<?php
// What a shared load costs (issue 47: the hardening may cost at most 1 ms a
// load): Model::load($path, ['shared' => true]) with the server not running
// (a start), the first load of a new process with it running, and the later
// loads of one process (what every request of a PHP-FPM worker does). Each
// extension given is measured in the same run, alternating, each with a
// state directory of its own.
//
// Usage: php bench/shared_load.php MODEL LLAMA_SERVER EXTENSION [EXTENSION...]
// (each extension with infer-serve beside it). Prints a Markdown table.

declare(strict_types=1);

[$self, $model, $server] = array_slice($argv, 0, 3);
$extensions = array_slice($argv, 3);
if ($extensions === [] || !is_file($model) || !is_file($server)) {
    fwrite(STDERR, "usage: php bench/shared_load.php MODEL LLAMA_SERVER EXTENSION [EXTENSION...]\n");
    exit(2);
}
const LATER = 300;
const ROUNDS = 3;

$child = <<<'PHP'
    $path = $argv[1];
    $t = hrtime(true);
    Displace\Infer\Model::load($path, ['shared' => true]);
    $first = (hrtime(true) - $t) / 1e6;
    $later = [];
    for ($i = 0; $i < (int) $argv[2]; $i++) {
        $t = hrtime(true);
        Displace\Infer\Model::load($path, ['shared' => true]);
        $later[] = (hrtime(true) - $t) / 1e3;
    }
    sort($later);
    echo json_encode(['first_ms' => $first, 'later_us' => $later[intdiv(count($later), 2)], 'later_mean_us' => array_sum($later) / count($later)]);
    PHP;

/** One process of $ext against the state directory $dir; its figures. */
function run(string $ext, string $dir, string $model, string $server, string $child): array
{
    $cmd = [PHP_BINARY, '-n', '-d', "extension=$ext", '-d', "infer.server_model=$model", '-d', "infer.server_binary=$server",
        '-d', "infer.server_dir=$dir", '-d', 'infer.server_slots=1', '-d', 'infer.server_ctx=512', '-d', 'infer.server_threads=1',
        '-r', $child, $model, (string) LATER];
    $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
    $out = stream_get_contents($pipes[1]);
    $err = stream_get_contents($pipes[2]);
    proc_close($proc);
    $r = json_decode($out, true);
    if (!is_array($r)) {
        fwrite(STDERR, "failed: $out $err\n");
        exit(1);
    }
    return $r;
}

$rows = [];
for ($round = 0; $round < ROUNDS; $round++) {
    foreach ($extensions as $i => $ext) {
        $dir = sys_get_temp_dir() . "/infer-shared-load-$i-" . getmypid();
        // The first process starts the server; a second, while the first's
        // grace time keeps it up, finds it running.
        $start = run($ext, $dir, $model, $server, $child);
        $found = run($ext, $dir, $model, $server, $child);
        $rows[$i][] = ['start_ms' => $start['first_ms'], 'found_ms' => $found['first_ms'],
            'later_us' => ($start['later_us'] + $found['later_us']) / 2, 'later_mean_us' => ($start['later_mean_us'] + $found['later_mean_us']) / 2];
        exec('rm -rf ' . escapeshellarg($dir));
        sleep(1); // the supervisor sees its directory gone and stops the server
    }
}
$median = function (array $xs): float {
    sort($xs);
    return $xs[intdiv(count($xs), 2)];
};
echo "| extension | a start (ms) | first load, server running (ms) | later load (µs, median) | later load (µs, mean) |\n";
echo "|---|--:|--:|--:|--:|\n";
foreach ($extensions as $i => $ext) {
    $col = fn (string $k) => $median(array_column($rows[$i], $k));
    printf("| %s | %.0f | %.2f | %.0f | %.0f |\n", $ext, $col('start_ms'), $col('found_ms'), $col('later_us'), $col('later_mean_us'));
}
