<?php
// Issue 15: Model::connect() to a local llama-server against the same model
// in process, same llama.cpp, same threads, flash attention off on both.
//
// 1. Overhead per call: the README's extraction example (schema, greedy),
//    through connect() and in process, interleaved rounds; and the loopback
//    round trip (GET /health) that a call pays a few times over (tokenize
//    requests, the completion).
// 2. Throughput: C concurrent PHP processes each sending the same free-text
//    requests, against one llama-server with C parallel slots (continuous
//    batching), and C processes each with the model in process, sharing the
//    same cores; aggregate generated tokens per second at C = 1, 2, 4, 8.
//
// Usage: php -d extension=... bench/remote.php MODEL LLAMA_SERVER [--rounds N] [--requests N]
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

const SCHEMA = ['type' => 'object', 'properties' => [
    'name' => ['type' => 'string'], 'age' => ['type' => 'integer'], 'city' => ['type' => 'string'],
]];

function extraction(): Prompt
{
    return Prompt::system('Extract the data. Output JSON only.')->withUser('Maria is 31 years old and lives in Lisbon.');
}

/** @return array{resource, string} the server process and its base URL */
function start_server(string $binary, string $model, int $slots, int $threads): array
{
    $probe = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
    fclose($probe);
    $process = proc_open(
        [$binary, '-m', $model, '--host', '127.0.0.1', '--port', (string) $port, '-fa', 'off',
            '-t', (string) $threads, '-tb', (string) $threads, '-np', (string) $slots, '-c', (string) (2048 * $slots)],
        [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']],
        $pipes,
    );
    $url = "http://127.0.0.1:$port";
    $deadline = microtime(true) + 60;
    while (microtime(true) < $deadline) {
        if (str_contains((string) @file_get_contents("$url/health"), 'ok')) {
            return [$process, $url];
        }
        usleep(100000);
    }
    throw new RuntimeException('llama-server did not start');
}

function stop_server($process): void
{
    proc_terminate($process);
    proc_close($process);
}

/** One worker process: $requests free-text chats; prints generated tokens. */
function worker(string $mode, string $target, int $requests, int $maxTokens, int $index): never
{
    $model = $mode === 'remote' ? Model::connect($target) : Model::load($target);
    $tokens = 0;
    for ($i = 0; $i < $requests; $i++) {
        $r = $model->chat(Prompt::user("Write a short story about a lighthouse keeper, number $index-$i."),
            maxTokens: $maxTokens, options: ['stop' => ['THE END']]);
        $tokens += $r->tokensGenerated();
    }
    echo $tokens, "\n";
    exit(0);
}

/** C processes at once: aggregate tokens/s. */
function throughput(string $mode, string $target, int $c, int $requests, int $maxTokens, string $ext): float
{
    $procs = [];
    $start = hrtime(true);
    for ($i = 0; $i < $c; $i++) {
        $procs[] = proc_open(
            [PHP_BINARY, '-d', "extension=$ext", __FILE__, '--worker', $mode, $target, (string) $requests, (string) $maxTokens, (string) $i],
            [1 => ['pipe', 'w'], 2 => ['file', '/dev/null', 'w']],
            $pipes,
        );
        $outs[] = $pipes[1];
    }
    $tokens = 0;
    foreach ($procs as $i => $p) {
        $tokens += (int) trim(stream_get_contents($outs[$i]));
        proc_close($p);
    }
    $seconds = (hrtime(true) - $start) / 1e9;
    return $tokens / $seconds;
}

if (($argv[1] ?? '') === '--worker') {
    worker($argv[2], $argv[3], (int) $argv[4], (int) $argv[5], (int) $argv[6]);
}

[$_, $modelPath, $binary] = $argv + [null, null, null];
if (!$modelPath || !$binary) {
    fwrite(STDERR, "usage: php bench/remote.php MODEL LLAMA_SERVER [--rounds N] [--requests N]\n");
    exit(2);
}
$opt = fn (string $name, int $default) => ($i = array_search("--$name", $argv, true)) !== false ? (int) $argv[$i + 1] : $default;
$rounds = $opt('rounds', 15);
$requests = $opt('requests', 3);
$threads = (int) trim((string) shell_exec('nproc'));
$ext = ini_get('extension') ?: (getenv('INFER_EXTENSION') ?: __DIR__ . '/../target/release/libinfer.so');

// 1. Overhead per call.
[$server, $url] = start_server($binary, $modelPath, 1, $threads);
$remote = Model::connect($url);
$local = Model::load($modelPath, ['n_threads' => $threads]);
$warm = fn (Model $m) => $m->chat(extraction(), maxTokens: 64, options: ['schema' => SCHEMA]);
$warm($remote);
$warm($local);
$t_local = $t_remote = $rtt = [];
for ($i = 0; $i < $rounds; $i++) {
    [$ms, $a] = ms(fn () => $warm($local));
    $t_local[] = $ms;
    [$ms, $b] = ms(fn () => $warm($remote));
    $t_remote[] = $ms;
    if ($a->text() !== $b->text()) {
        throw new RuntimeException("replies differ:\n{$a->text()}\n{$b->text()}");
    }
    for ($k = 0; $k < 5; $k++) {
        [$ms] = ms(fn () => file_get_contents("$url/health"));
        $rtt[] = $ms;
    }
}
$tokens = $warm($local)->tokensGenerated();
stop_server($server);
$ml = median($t_local);
$mr = median($t_remote);
$mrtt = median($rtt);
// A chat is a few requests: /tokenize per message (twice: with and without
// special tokens) and per template piece, then the completion.
$requestsPerCall = 2 * 2 + 1 + 1;
printf("extraction example (%d tokens generated, greedy, schema), %d interleaved rounds, %d threads\n", $tokens, $rounds, $threads);
printf("  in process        %8.1f ms (median)\n", $ml);
printf("  Model::connect()  %8.1f ms (median)   ratio %.3f\n", $mr, $mr / $ml);
printf("  loopback round trip (GET /health) %.3f ms; %d requests per call: %.1f ms\n", $mrtt, $requestsPerCall, $requestsPerCall * $mrtt);
printf("  ratio less the loopback round trips: %.3f (goal <= 1.10)\n", ($mr - $requestsPerCall * $mrtt) / $ml);

// 2. Throughput.
echo "\nthroughput: C processes, each $requests chats of up to 96 tokens (free text)\n";
printf("  %3s %14s %14s %8s\n", 'C', 'in-process t/s', 'server t/s', 'ratio');
foreach ([1, 2, 4, 8] as $c) {
    $in = throughput('local', $modelPath, $c, $requests, 96, $ext);
    [$server, $url] = start_server($binary, $modelPath, $c, $threads);
    $out = throughput('remote', $url, $c, $requests, 96, $ext);
    stop_server($server);
    printf("  %3d %14.1f %14.1f %8.2f\n", $c, $in, $out, $out / $in);
}
