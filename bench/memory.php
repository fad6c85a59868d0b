<?php
// Resident memory over long runs in one process.
//   php -d extension=target/release/libinfer.so bench/memory.php MODEL [CALLS] [CYCLES] [THREADS]
// 1. CALLS chat() calls (default 2,000) mixing free, schema and grammar runs
//    (and errors): growth of resident memory after a warm-up of 100 calls.
// 2. CYCLES load/chat/close cycles (default 200): growth after 10 cycles.
// Prints a Markdown table; exits 1 when a growth is 10 MB or more.
declare(strict_types=1);

use Displace\Infer\{InferenceException, Model, Prompt};

$path = $argv[1] ?? '';
$calls = (int) ($argv[2] ?? 2000);
$cycles = (int) ($argv[3] ?? 200);
// Threads per model (default: llama.cpp's cores); memory does not depend on it.
$options = isset($argv[4]) ? ['n_threads' => (int) $argv[4]] : [];
if (!is_file($path)) {
    fwrite(STDERR, "usage: php bench/memory.php MODEL [CALLS] [CYCLES]\n");
    exit(2);
}

function rss_mb(): float
{
    return preg_match('/^VmRSS:\s+(\d+) kB/m', (string) file_get_contents('/proc/self/status'), $m) ? $m[1] / 1024 : NAN;
}

$schemas = [
    ['type' => 'object', 'properties' => ['name' => ['type' => 'string'], 'age' => ['type' => 'integer']]],
    ['type' => 'array', 'items' => ['enum' => ['red', 'green', 'blue']], 'maxItems' => 3],
    ['type' => 'object', 'properties' => ['ok' => ['type' => 'boolean'], 'score' => ['type' => 'number', 'minimum' => 0, 'maximum' => 1]]],
];
$grammars = ['root ::= "yes" | "no"', 'root ::= [0-9]{1,4}', "root ::= item (\", \" item)*\nitem ::= [a-z]+"];
$questions = ['Say hello.', 'Name a colour.', 'Is water wet?', 'Count to three.', 'Describe a cat.'];

$model = Model::load($path, $options);
$errors = 0;
$one = function (int $i) use ($model, $schemas, $grammars, $questions, &$errors): void {
    $prompt = Prompt::system('Answer briefly.')->withUser($questions[$i % count($questions)] . " ($i)");
    try {
        match ($i % 5) {
            0 => $model->chat($prompt, maxTokens: 12),
            1 => $model->chat($prompt, maxTokens: 24, options: ['schema' => $schemas[$i % count($schemas)]]),
            2 => $model->chat($prompt, maxTokens: 8, options: ['grammar' => $grammars[$i % count($grammars)]]),
            3 => $model->raw("Once upon a time $i", maxTokens: 8, temperature: 0.8, seed: $i),
            4 => $model->chat($prompt, maxTokens: 4, options: ['schema' => ['type' => 'string', 'pattern' => '(']]),
        };
    } catch (InferenceException) {
        $errors++;
    }
};

$started = hrtime(true);
for ($i = 0; $i < min(100, $calls); $i++) {
    $one($i);
}
$warm = rss_mb();
for (; $i < $calls; $i++) {
    $one($i);
}
$after_calls = rss_mb();
$calls_s = (hrtime(true) - $started) / 1e9;
$model->close();

$started = hrtime(true);
$warm_cycles = NAN;
for ($c = 0; $c < $cycles; $c++) {
    $m = Model::load($path, $options);
    $m->chat(Prompt::user('Hi'), maxTokens: 2, nCtx: 256);
    $m->close();
    unset($m);
    if ($c === min(9, $cycles - 1)) {
        $warm_cycles = rss_mb();
    }
}
$after_cycles = rss_mb();
$cycles_s = (hrtime(true) - $started) / 1e9;

$calls_growth = $after_calls - $warm;
$cycles_growth = $after_cycles - $warm_cycles;
echo "| figure | value | target |\n|---|---|---|\n";
printf("| %d calls (free, schema, grammar, sampled raw, schema errors: %d) | %.0f s | |\n", $calls, $errors, $calls_s);
printf("| resident memory after 100 calls / after %d | %.1f MB / %.1f MB | |\n", $calls, $warm, $after_calls);
printf("| growth after warm-up | %+.1f MB | < 10 MB — %s |\n", $calls_growth, $calls_growth < 10 ? 'met' : '**not met**');
printf("| %d load/chat/close cycles | %.0f s | |\n", $cycles, $cycles_s);
printf("| resident memory after 10 cycles / after %d | %.1f MB / %.1f MB | |\n", $cycles, $warm_cycles, $after_cycles);
printf("| growth after warm-up | %+.1f MB | < 10 MB — %s |\n", $cycles_growth, $cycles_growth < 10 ? 'met' : '**not met**');
exit($calls_growth < 10 && $cycles_growth < 10 ? 0 : 1);
