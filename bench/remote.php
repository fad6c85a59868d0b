<?php
// Model::connect() to a local llama-server against the same model
// in process, same llama.cpp, same threads, flash attention off on both.
//
// 1. Overhead per call: the README's extraction example (schema, greedy),
//    through connect() and in process, in alternating blocks: ten different
//    texts (what an extraction workload sends), the same text again and
//    again, and the first token alone; and the loopback round trip (GET
//    /health) that a call pays a few times over (tokenize requests, the
//    completion).
// 2. Throughput: C concurrent PHP processes each sending the same free-text
//    requests, against one llama-server with C parallel slots (continuous
//    batching), and C processes each with the model in process, sharing the
//    same cores; aggregate generated tokens per second at C = 1, 2, 4, 8.
//
// Usage: php -d extension=... bench/remote.php MODEL LLAMA_SERVER [--rounds N] [--blocks N] [--requests N]
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

const SCHEMA = ['type' => 'object', 'properties' => [
    'name' => ['type' => 'string'], 'age' => ['type' => 'integer'], 'city' => ['type' => 'string'],
]];

/**
 * Ten extraction texts, different for each $set: llama-server keeps earlier
 * prompts in a RAM cache and restores the longest match, so a text it has
 * seen before costs it one token, not a prompt.
 *
 * @return list<string>
 */
function texts(int $set): array
{
    $names = ['Maria', 'Tom', 'Aiko', 'Pedro', 'Lena', 'Samuel', 'Chen', 'Fatima', 'Olaf', 'Grace', 'Ines', 'Yusuf'];
    $cities = ['Lisbon', 'Chicago', 'Osaka', 'Porto', 'Berlin', 'Nairobi', 'Vancouver', 'Casablanca', 'Oslo', 'Dublin', 'Lima'];
    $forms = ['%s is %d years old and lives in %s.', '%s, %d, moved to %3$s last spring.', '%s (%d) studies in %s.',
        'Our driver %s is %d and is based in %s.', '%s is a %d-year-old architect in %s.'];
    $texts = [];
    for ($i = 0; $i < 10; $i++) {
        $n = $set * 10 + $i;
        $texts[] = sprintf($forms[$n % 5], $names[$n % 12], 18 + ($n * 7) % 60, $cities[$n % 11]);
    }
    return $texts;
}

// A chat is a few requests: /tokenize per message (twice: with and without
// special tokens) and per template piece, then the completion.
const REQUESTS_PER_CALL = 2 * 2 + 1 + 1;

function extraction_of(string $text): Prompt
{
    return Prompt::system('Extract the data. Output JSON only.')->withUser($text);
}

/**
 * One block of overhead measurements in a process of its own (see part 1):
 * the extraction of each of texts($set) once ('varied'), of the first of them
 * $rounds times ('same'), and its first token alone $rounds times ('first').
 */
function overhead_block(string $mode, string $target, int $rounds, int $set, string $ext): array
{
    $out = shell_exec(implode(' ', array_map('escapeshellarg',
        [PHP_BINARY, '-d', "extension=$ext", __FILE__, '--overhead', $mode, $target, (string) $rounds, (string) $set])));
    $block = json_decode((string) $out, true);
    if (!is_array($block)) {
        throw new RuntimeException("overhead block ($mode) failed: $out");
    }
    return $block;
}

function overhead_worker(string $mode, string $target, int $rounds, int $set): never
{
    $threads = (int) trim((string) shell_exec('nproc'));
    $model = $mode === 'local' ? Model::load($target, ['n_threads' => $threads]) : Model::connect($target);
    $call = fn (string $text, int $max) => $model->chat(extraction_of($text), maxTokens: $max, options: ['schema' => SCHEMA])->text();
    $run = function (array $texts, int $max = 64) use ($call): array {
        $call($texts[0], $max); // warm-up, not timed
        $result = ['ms' => [], 'texts' => []];
        foreach ($texts as $text) {
            [$ms, $reply] = ms(fn () => $call($text, $max));
            $result['ms'][] = $ms;
            $result['texts'][] = $reply;
        }
        return $result;
    };
    $texts = texts($set);
    $same = array_fill(0, $rounds, $texts[0]);
    echo json_encode(['varied' => $run($texts), 'same' => $run($same), 'first' => $run($same, 1)]);
    exit(0);
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

if (($argv[1] ?? '') === '--overhead') {
    overhead_worker($argv[2], $argv[3], (int) $argv[4], (int) $argv[5]);
}
if (($argv[1] ?? '') === '--worker') {
    worker($argv[2], $argv[3], (int) $argv[4], (int) $argv[5], (int) $argv[6]);
}

[$_, $modelPath, $binary] = $argv + [null, null, null];
if (!$modelPath || !$binary) {
    fwrite(STDERR, "usage: php bench/remote.php MODEL LLAMA_SERVER [--rounds N] [--blocks N] [--requests N]\n");
    exit(2);
}
$opt = fn (string $name, int $default) => ($i = array_search("--$name", $argv, true)) !== false ? (int) $argv[$i + 1] : $default;
$rounds = $opt('rounds', 10);
$blocks = $opt('blocks', 3);
$requests = $opt('requests', 3);
$threads = (int) trim((string) shell_exec('nproc'));
$ext = ini_get('extension') ?: (getenv('INFER_EXTENSION') ?: __DIR__ . '/../target/release/libinfer.so');

// 1. Overhead per call. Each mode runs in a process of its own, in
// alternating blocks with a pause between them: llama.cpp's threads keep
// polling for a moment after a call, so a server and an in-process model
// measured in one process, call after call, slow each other down.
// llama-server keeps earlier prompts in a RAM cache and restores the longest
// match, so each remote block gets a server of its own, which has seen none
// of its texts (in process, each block is a new process too).
$runs = ['local' => [], 'remote' => []];
$rtt = [];
for ($b = 0; $b < $blocks; $b++) {
    foreach (['local', 'remote'] as $mode) {
        if ($mode !== 'local') {
            [$server, $url] = start_server($binary, $modelPath, 1, $threads);
        }
        usleep(500000);
        $runs[$mode][] = overhead_block($mode, $mode === 'local' ? $modelPath : $url, $rounds, $b, $ext);
        if ($mode !== 'local') {
            for ($k = 0; $k < 20; $k++) {
                $rtt[] = ms(fn () => file_get_contents("$url/health"))[0];
            }
            stop_server($server);
        }
    }
}
// The two engines must have written the same replies (greedy, same llama.cpp).
foreach ($runs['local'] as $b => $local) {
    foreach (['varied', 'same'] as $kind) {
        foreach ($local[$kind]['texts'] as $i => $text) {
            $remote = $runs['remote'][$b][$kind]['texts'][$i];
            if ($remote !== $text) {
                throw new RuntimeException("replies differ (block $b, $kind, input $i):\n$text\n$remote");
            }
        }
    }
}
$mrtt = median($rtt);
$figure = fn (string $mode, string $kind) => median(array_merge(...array_map(fn ($b) => $b[$kind]['ms'], $runs[$mode])));
printf("first token only (maxTokens 1, the same text again): in process %.1f ms, Model::connect() %.1f ms\n", $figure('local', 'first'), $figure('remote', 'first'));
printf("extraction example (greedy, schema), %d blocks of each mode, %d threads; loopback round trip %.3f ms\n", $blocks, $threads, $mrtt);
foreach (['varied' => '10 different texts', 'same' => 'the same text every call'] as $kind => $what) {
    $ml = $figure('local', $kind);
    $mr = $figure('remote', $kind);
    printf("  %s:\n", $what);
    printf("    in process        %8.1f ms (median)\n", $ml);
    printf("    Model::connect()  %8.1f ms (median)   ratio %.3f\n", $mr, $mr / $ml);
    printf("    ratio less %d loopback round trips: %.3f (goal <= 1.10)\n", REQUESTS_PER_CALL, ($mr - REQUESTS_PER_CALL * $mrtt) / $ml);
}

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
