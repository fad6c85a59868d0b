<?php
// Helpers the PHP benchmarks share.
declare(strict_types=1);

/** The notes the extraction benchmarks read, one person each. */
const NOTES = [
    'Maria is 31 years old and lives in Lisbon.',
    'Tom, a 52-year-old baker from Leeds, opened his shop in 1998.',
    'Our new colleague Aiko (27) moved here from Osaka last spring.',
    'Pedro Alves, 45, has lived in Porto all his life.',
    'At 19, Lena left Berlin to study.',
    'Sam is a retired teacher aged 68 who lives in Dublin.',
    'Grace, 36, runs a bakery in Nairobi.',
    'Ivan is 24 and works in Kyiv as a nurse.',
];

/** The median of $xs (the mean of the middle two for an even count). */
function median(array $xs): float
{
    sort($xs);
    $n = count($xs);
    return $n % 2 ? $xs[intdiv($n, 2)] : ($xs[$n / 2 - 1] + $xs[$n / 2]) / 2;
}

/** The value below which a share $p of $values falls (nearest rank). */
function percentile(array $values, float $p): float
{
    sort($values);
    return $values[(int) min(count($values) - 1, floor($p * count($values)))];
}

/**
 * Run $fn once: [its wall time in milliseconds, what it returned].
 *
 * @return array{float, mixed}
 */
function ms(callable $fn): array
{
    $t = hrtime(true);
    $r = $fn();
    return [(hrtime(true) - $t) / 1e6, $r];
}

/**
 * Run $cmd (a benchmark's child process, in $cwd) and decode the JSON object
 * it prints; throws with its output when it prints none (or, with $quiet,
 * anything on stderr).
 */
function child_json(array $cmd, ?string $cwd = null, bool $quiet = false): array
{
    $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, $cwd);
    $out = stream_get_contents($pipes[1]);
    $err = stream_get_contents($pipes[2]);
    proc_close($p);
    $row = json_decode(trim($out), true);
    if (!is_array($row) || ($quiet && $err !== '')) {
        throw new RuntimeException('child ' . implode(' ', $cmd) . " failed: $out $err");
    }
    return $row;
}

/** @return array{resource, string} the server process and its base URL */
function start_server(string $binary, string $model, int $slots, int $threads, array $extra = []): array
{
    $probe = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
    fclose($probe);
    $process = proc_open(
        [$binary, '-m', $model, '--host', '127.0.0.1', '--port', (string) $port, '-fa', 'off',
            '-t', (string) $threads, '-tb', (string) $threads, '-np', (string) $slots, '-c', (string) (2048 * $slots),
            ...$extra],
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

/** Run a command; return [exit code, stdout, stderr]. */
function run_command(array $cmd): array
{
    $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
    $out = stream_get_contents($pipes[1]);
    $err = stream_get_contents($pipes[2]);
    fclose($pipes[1]);
    fclose($pipes[2]);
    return [proc_close($p), $out, $err];
}

/**
 * The arguments `MODEL TOOLS_DIR [THREADS] [ROUNDS]` of a benchmark that
 * runs llama.cpp's tools beside the extension: [model path, tools directory,
 * threads (2), rounds (5)]. Prints `usage` and ends the script when the model
 * or the directory is missing.
 *
 * @return array{string, string, int, int}
 */
function model_and_tools(array $argv, string $usage): array
{
    [$model_path, $tools] = [$argv[1] ?? '', $argv[2] ?? ''];
    if (!is_file($model_path) || !is_dir($tools)) {
        fwrite(STDERR, "usage: php $usage\n");
        exit(2);
    }
    return [$model_path, $tools, (int) ($argv[3] ?? 2), (int) ($argv[4] ?? 5)];
}

/** SmolLM2's chat template (ChatML), rendered as chat() renders it. */
function chatml(string $system, string $user): string
{
    return "<|im_start|>system\n$system<|im_end|>\n<|im_start|>user\n$user<|im_end|>\n<|im_start|>assistant\n";
}

/**
 * llama-completion's compute for one run: prompt eval + eval + sampling, in
 * ms, with the prompt and generated token counts and the text it printed.
 */
function completion(string $tools, string $model, int $threads, string $prompt, int $n, ?string $grammar_file): array
{
    $cmd = [
        "$tools/llama-completion", '-m', $model, '-p', $prompt, '-n', (string) $n, '--temp', '0',
        '-t', (string) $threads, '-tb', (string) $threads, '-c', '2048', '-b', '512', '-ub', '512',
        '-no-cnv', '--no-display-prompt', '--simple-io',
    ];
    if ($grammar_file !== null) {
        array_push($cmd, '--grammar-file', $grammar_file);
    }
    [$code, $out, $err] = run_command($cmd);
    $ms = fn (string $what) => preg_match("/$what\\s*=\\s*([0-9.]+) ms(?: \\/\\s*(\\d+))?/", $err, $m) ? [(float) $m[1], (int) ($m[2] ?? 0)] : [NAN, 0];
    [$prompt_ms, $prompt_tokens] = $ms('prompt eval time');
    [$eval_ms, $eval_runs] = $ms('(?<!prompt )eval time');
    [$sampling_ms] = $ms('sampling time');
    if ($code !== 0 || is_nan($prompt_ms + $eval_ms + $sampling_ms)) {
        fwrite(STDERR, "llama-completion failed ($code):\n$err\n");
        exit(1);
    }
    return [
        'compute' => $prompt_ms + $eval_ms + $sampling_ms,
        'prompt_ms' => $prompt_ms,
        'prompt_tokens' => $prompt_tokens,
        'eval_runs' => $eval_runs,
        'text' => rtrim(preg_replace('/\s*\[end of text\]\s*$/', '', $out)),
    ];
}

/**
 * The SPEC's extraction example: [system, user, schema, the Prompt, a file
 * holding the schema's GBNF for llama.cpp's tools].
 */
function spec_extraction(): array
{
    $system = 'Extract the data. Output JSON only.';
    $user = 'Maria is 31 years old and lives in Lisbon.';
    $schema = ['type' => 'object', 'properties' => [
        'name' => ['type' => 'string'], 'age' => ['type' => 'integer'], 'city' => ['type' => 'string'],
    ]];
    $gbnf_file = tempnam(sys_get_temp_dir(), 'gbnf');
    file_put_contents($gbnf_file, \Displace\Infer\Grammar::fromSchema($schema));
    return [$system, $user, $schema, \Displace\Infer\Prompt::system($system)->withUser($user), $gbnf_file];
}

/**
 * The `--name value` options of a benchmark's command line over $defaults
 * (the name without its dashes); an unknown one ends the script.
 *
 * @param list<string> $args what follows the positional arguments
 * @param array<string, string|int|null> $defaults
 * @return array<string, string|int|null>
 */
function options(array $args, array $defaults): array
{
    while ($args) {
        $flag = substr((string) array_shift($args), 2);
        if (!array_key_exists($flag, $defaults)) {
            fwrite(STDERR, "unknown option --$flag\n");
            exit(2);
        }
        $defaults[$flag] = array_shift($args);
    }
    return $defaults;
}

/** The resident memory of process $pid in kB (VmRSS), or -1 when it cannot be read. */
function rss_kb(int $pid): int
{
    $status = (string) @file_get_contents("/proc/$pid/status");
    return preg_match('/VmRSS:\s+(\d+) kB/', $status, $m) ? (int) $m[1] : -1;
}

/**
 * $clients forked clients, client c sending requests c, c + $clients, …
 * below $requests one after another through $request (which returns the
 * request's record, or null when it failed: the client then exits with an
 * error); the records of every client and the wall time (s). Files go to
 * $dir.
 *
 * @return array{list<array>, float}
 */
function fork_clients(int $clients, int $requests, callable $request, string $dir): array
{
    $started = hrtime(true);
    $children = [];
    for ($c = 0; $c < $clients; $c++) {
        $pid = pcntl_fork();
        if ($pid === 0) {
            $lines = [];
            for ($i = $c; $i < $requests; $i += $clients) {
                $t = hrtime(true);
                $record = $request($i);
                if ($record === null) {
                    exit(1);
                }
                $lines[] = json_encode(['ms' => (hrtime(true) - $t) / 1e6] + $record);
            }
            file_put_contents("$dir/client-$c.jsonl", implode("\n", $lines));
            exit(0);
        }
        $children[] = $pid;
    }
    $failed = false;
    foreach ($children as $pid) {
        pcntl_waitpid($pid, $status);
        $failed = $failed || pcntl_wexitstatus($status) !== 0;
    }
    $wall = (hrtime(true) - $started) / 1e9;
    if ($failed) {
        throw new RuntimeException('a client failed');
    }
    $records = [];
    for ($c = 0; $c < $clients; $c++) {
        foreach (explode("\n", (string) file_get_contents("$dir/client-$c.jsonl")) as $line) {
            $records[] = json_decode($line, true);
        }
        unlink("$dir/client-$c.jsonl");
    }
    return [$records, $wall];
}
