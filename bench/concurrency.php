<?php
// Aggregate generation throughput with several PHP processes generating at
// once, against one process generating alone, measured in the same run.
//
// Why: ggml's worker threads busy-wait (between graphs for a while, and at
// every barrier inside a graph), so processes that each take every core
// starve each other: two processes at default settings were measured at
// ~0.085x the throughput of one. This script measures that effect and any
// fix for it (thread count, polling, a machine-wide thread budget).
//
//   php -d extension=target/release/libinfer.so bench/concurrency.php MODEL \
//       [--workers 1,2,4,8] [--tokens 96] [--seconds 20] [--options JSON] \
//       [--gen-options JSON] [--prompt TEXT] [--raw] [--n-ctx 512] [--json FILE] [--timeout 120]
//
//   --workers      concurrent worker counts to measure, in order (default 1,2,4,8)
//   --tokens       maxTokens per call (default 96)
//   --seconds      measurement window per worker count (default 20)
//   --options      Model::load() options as JSON (default {}: default settings),
//                  e.g. '{"n_threads":1}'
//   --gen-options  chat()/raw() options as JSON (default {"stop":[]})
//   --prompt       the prompt (default: one that makes the model write at length)
//   --raw          call raw() instead of chat(); tokens = countTokens(output)
//   --n-ctx        context size per call (default 512)
//   --json         also write the per-worker results to FILE as JSON
//   --timeout      seconds a round may take beyond its window (and for loading
//                  and warm-up) before its workers are killed (default 120)
//
// Method: for each N the parent forks N workers. Each loads the model (the
// parent never does: contexts do not survive fork); then, one worker at a
// time, each makes an untimed warm-up call and reports "ready" on its own
// socket pair, and blocks. When all N are ready the parent sends every
// worker the same start time and deadline on the CLOCK_MONOTONIC clock
// that hrtime() reads, so all start at once. A worker
// starts calls back to back until the deadline; only calls that *end* by
// the deadline are counted, so every counted token was generated while all
// N workers were busy. A worker's rate is its counted tokens over the time
// from the start to the end of its last counted call; the aggregate is the
// sum of the workers' rates. If a worker completes no call in the window
// (very slow contended runs), its first call is counted instead and the row
// is marked with '*': widen --seconds or lower --tokens.
//
// cpu% is the worker's CPU time (all its threads, user+system, getrusage)
// over the same interval, in percent of one core: a worker with 2 threads
// that never wait shows ~200%; far above its share of the machine while its
// throughput collapses means threads are spinning rather than working.
declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

function usage(string $why): never
{
    fwrite(STDERR, "$why\nusage: php -d extension=libinfer.so bench/concurrency.php MODEL "
        . "[--workers 1,2,4,8] [--tokens 96] [--seconds 20] [--options JSON] "
        . "[--gen-options JSON] [--prompt TEXT] [--raw] [--n-ctx 512] [--json FILE] [--timeout 120]\n");
    exit(2);
}

function parse_args(array $argv): array
{
    $cfg = [
        'model' => null,
        'workers' => [1, 2, 4, 8],
        'tokens' => 96,
        'seconds' => 20.0,
        'options' => [],
        'gen_options' => ['stop' => []],
        'prompt' => 'Write a long story about a dragon who learns to bake bread. '
            . 'Describe every character, place and event in great detail.',
        'raw' => false,
        'n_ctx' => 512,
        'json' => null,
        'timeout' => 120.0,
    ];
    $json = function (string $flag, string $text): array {
        $v = json_decode($text, true);
        if (!is_array($v)) {
            usage("$flag: not a JSON object: $text");
        }
        return $v;
    };
    for ($i = 1; $i < count($argv); $i++) {
        $a = $argv[$i];
        if ($a === '--raw') {
            $cfg['raw'] = true;
            continue;
        }
        if (str_starts_with($a, '--')) {
            if (str_contains($a, '=')) {
                [$a, $v] = explode('=', $a, 2);
            } else {
                $v = $argv[++$i] ?? usage("$a needs a value");
            }
            switch ($a) {
                case '--workers':
                    $ns = array_map('intval', explode(',', $v));
                    foreach ($ns as $n) {
                        if ($n < 1) {
                            usage("--workers: bad count in '$v'");
                        }
                    }
                    $cfg['workers'] = $ns;
                    break;
                case '--tokens': $cfg['tokens'] = max(1, (int) $v); break;
                case '--seconds': $cfg['seconds'] = max(0.1, (float) $v); break;
                case '--options': $cfg['options'] = $json($a, $v); break;
                case '--gen-options': $cfg['gen_options'] = $json($a, $v); break;
                case '--prompt': $cfg['prompt'] = $v; break;
                case '--n-ctx': $cfg['n_ctx'] = max(16, (int) $v); break;
                case '--json': $cfg['json'] = $v; break;
                case '--timeout': $cfg['timeout'] = max(1.0, (float) $v); break;
                default: usage("unknown flag $a");
            }
            continue;
        }
        if ($cfg['model'] !== null) {
            usage("unexpected argument $a");
        }
        $cfg['model'] = $a;
    }
    if ($cfg['model'] === null || !is_file($cfg['model'])) {
        usage('MODEL must be a GGUF file');
    }
    if (!extension_loaded('infer')) {
        usage('the infer extension is not loaded (php -d extension=.../libinfer.so)');
    }
    foreach (['pcntl_fork', 'stream_socket_pair'] as $f) {
        if (!function_exists($f)) {
            usage("$f() is not available (pcntl extension needed)");
        }
    }
    return $cfg;
}

/** CPU seconds (user + system) this process has used, all threads. */
function cpu_seconds(): float
{
    $r = getrusage();
    return $r['ru_utime.tv_sec'] + $r['ru_utime.tv_usec'] / 1e6
        + $r['ru_stime.tv_sec'] + $r['ru_stime.tv_usec'] / 1e6;
}

/** One generation call; returns the number of tokens generated. */
function generate(Model $model, array $cfg): int
{
    if ($cfg['raw']) {
        $out = $model->raw($cfg['prompt'], maxTokens: $cfg['tokens'], nCtx: $cfg['n_ctx'],
            temperature: 0.0, options: $cfg['gen_options']);
        return $model->countTokens($out);
    }
    return $model->chat(Prompt::user($cfg['prompt']), maxTokens: $cfg['tokens'],
        nCtx: $cfg['n_ctx'], temperature: 0.0, options: $cfg['gen_options'])->tokensGenerated();
}

function send($sock, array $msg): void
{
    fwrite($sock, json_encode($msg) . "\n");
}

/** The next message on $sock, or null on EOF or when $until (hrtime ns) passes. */
function receive($sock, ?int $until = null): ?array
{
    if ($until !== null) {
        $left = max(0, $until - hrtime(true));
        $r = [$sock];
        $w = $e = null;
        if (@stream_select($r, $w, $e, intdiv($left, 1_000_000_000), intdiv($left % 1_000_000_000, 1000)) < 1) {
            return null;
        }
    }
    $line = fgets($sock);
    return $line === false ? null : json_decode($line, true);
}

/** The child: load, warm up, wait for the start signal, generate, report. */
function worker($sock, array $cfg): never
{
    try {
        $model = Model::load($cfg['model'], $cfg['options']);
        // Warm-up, one worker at a time (the parent says when), so that
        // first-call costs stay out of the window and slow contended
        // warm-ups do not delay the round.
        if (receive($sock) === null) {
            exit(1);
        }
        generate($model, $cfg);
        send($sock, ['ready' => true]);
        $go = receive($sock);
        if ($go === null) {
            exit(1);
        }
        [$start, $deadline] = [(int) $go['start'], (int) $go['deadline']];
        while (hrtime(true) < $start) {
            usleep(max(0, min(1000, intdiv($start - hrtime(true), 1000))));
        }
        $cpu0 = cpu_seconds();
        $calls = [];
        $counted_tokens = 0;
        $counted_end = null;
        $counted_cpu = null;
        $fallback = false;
        while (true) {
            $t0 = hrtime(true);
            if ($t0 >= $deadline && $counted_end !== null) {
                break;
            }
            $n = generate($model, $cfg);
            $t1 = hrtime(true);
            $calls[] = [$t0 - $start, $t1 - $start, $n];
            if ($t1 <= $deadline || $counted_end === null) {
                $fallback = $t1 > $deadline;
                $counted_tokens += $n;
                $counted_end = $t1;
                $counted_cpu = cpu_seconds() - $cpu0;
            }
            if ($t1 >= $deadline) {
                break;
            }
        }
        $elapsed = ($counted_end - $start) / 1e9;
        send($sock, [
            'pid' => getmypid(),
            'tokens' => $counted_tokens,
            'seconds' => $elapsed,
            'cpu_seconds' => $counted_cpu,
            'calls_counted' => count(array_filter($calls, fn ($c) => $c[1] <= $deadline - $start)) ?: 1,
            'fallback' => $fallback,
        ]);
        exit(0);
    } catch (\Throwable $e) {
        send($sock, ['error' => get_class($e) . ': ' . $e->getMessage()]);
        exit(1);
    }
}

/** Run N workers at once; returns their reports. */
function run_round(int $n, array $cfg): array
{
    $children = [];
    for ($i = 0; $i < $n; $i++) {
        $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        $pid = pcntl_fork();
        if ($pid < 0) {
            fwrite(STDERR, "fork failed\n");
            exit(1);
        }
        if ($pid === 0) {
            fclose($pair[0]);
            foreach ($children as $c) {
                fclose($c['sock']);
            }
            worker($pair[1], $cfg);
        }
        fclose($pair[1]);
        $children[] = ['pid' => $pid, 'sock' => $pair[0]];
    }
    // Watchdog: a round that overruns by far is abandoned and its workers
    // killed, so a starved run cannot hold the machine indefinitely.
    $grace = (int) ($cfg['timeout'] * 1e9);
    $until = hrtime(true) + $grace;
    $failed = null;
    foreach ($children as $c) {
        send($c['sock'], ['warm' => true]);
        $msg = receive($c['sock'], $until);
        if (!($msg['ready'] ?? false)) {
            $failed = $msg['error'] ?? 'a worker exited or timed out before it was ready';
        }
    }
    if ($failed === null) {
        // Everyone is loaded and warm: start together, 50 ms from now.
        $start = hrtime(true) + 50_000_000;
        $deadline = $start + (int) ($cfg['seconds'] * 1e9);
        $until = $deadline + $grace;
        foreach ($children as $c) {
            send($c['sock'], ['start' => $start, 'deadline' => $deadline]);
        }
    }
    $reports = [];
    foreach ($children as $c) {
        if ($failed === null) {
            $msg = receive($c['sock'], $until);
            if ($msg === null || isset($msg['error'])) {
                $failed = $msg['error'] ?? 'a worker exited or timed out without a report';
            } else {
                $reports[] = $msg;
            }
        }
        fclose($c['sock']);
    }
    foreach ($children as $c) {
        if ($failed !== null) {
            posix_kill($c['pid'], SIGKILL); // only the workers this round forked
        }
        pcntl_waitpid($c['pid'], $status);
    }
    if ($failed !== null) {
        fwrite(STDERR, "N=$n: $failed\n");
        return ['error' => $failed];
    }
    return $reports;
}

$cfg = parse_args($argv);
$cores = function_exists('posix_sysconf') && defined('POSIX_SC_NPROCESSORS_ONLN')
    ? posix_sysconf(POSIX_SC_NPROCESSORS_ONLN)
    : (int) trim((string) shell_exec('nproc'));
fprintf(STDERR, "model %s, %d cores, load options %s, %d tokens/call, %.1f s per round\n",
    basename($cfg['model']), $cores, json_encode((object) $cfg['options']),
    $cfg['tokens'], $cfg['seconds']);

$rows = [];
$lone = null;
foreach ($cfg['workers'] as $n) {
    $reports = run_round($n, $cfg);
    if (isset($reports['error'])) {
        $rows[] = ['workers' => $n, 'error' => $reports['error']];
        continue;
    }
    $rates = array_map(fn ($r) => $r['tokens'] / $r['seconds'], $reports);
    $aggregate = array_sum($rates);
    $cpu = array_map(fn ($r) => 100 * $r['cpu_seconds'] / $r['seconds'], $reports);
    if ($n === 1) {
        $lone = $aggregate;
    }
    $row = [
        'workers' => $n,
        'aggregate' => $aggregate,
        'per_worker_mean' => $aggregate / $n,
        'per_worker_min' => min($rates),
        'per_worker_max' => max($rates),
        'cpu_percent_mean' => array_sum($cpu) / $n,
        'calls' => array_sum(array_column($reports, 'calls_counted')),
        'fallback' => in_array(true, array_column($reports, 'fallback'), true),
        'reports' => $reports,
    ];
    $rows[] = $row;
    fprintf(STDERR, "N=%d: %.1f tok/s aggregate\n", $n, $aggregate);
}

echo "| workers | aggregate tok/s | per worker tok/s (mean, min-max) | vs N=1 | cpu% per worker | calls |\n";
echo "|--:|--:|--:|--:|--:|--:|\n";
foreach ($rows as $r) {
    if (isset($r['error'])) {
        printf("| %d | failed: %s | | | | |\n", $r['workers'], $r['error']);
        continue;
    }
    printf("| %d | %.1f%s | %.1f (%.1f-%.1f) | %s | %.0f | %d |\n",
        $r['workers'], $r['aggregate'], $r['fallback'] ? '*' : '',
        $r['per_worker_mean'], $r['per_worker_min'], $r['per_worker_max'],
        $lone ? sprintf('%.3fx', $r['aggregate'] / $lone) : 'n/a',
        $r['cpu_percent_mean'], $r['calls']);
}
if (in_array(true, array_column($rows, 'fallback'), true)) {
    echo "\n* a worker completed no call inside the window; its first call was counted.\n";
}
if ($lone === null) {
    echo "\n(no N=1 round: add 1 to --workers for the ratio)\n";
}
if ($cfg['json'] !== null) {
    file_put_contents($cfg['json'], json_encode([
        'model' => $cfg['model'], 'cores' => $cores, 'options' => $cfg['options'],
        'tokens' => $cfg['tokens'], 'seconds' => $cfg['seconds'], 'rows' => $rows,
    ], JSON_PRETTY_PRINT) . "\n");
}
