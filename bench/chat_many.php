<?php
// chatMany() against sequential chat() calls over the same prompts, and
// against llama.cpp's llama-batched-bench (-npp 64 -ntg 48 -npl 8,32).
//
// Usage: php -d extension=... bench/chat_many.php MODEL [TOOLS_BIN] [THREADS]
//
// Two rounds per batch size:
//  - rawMany(): plain-text prompts of 64 tokens that count upwards, so that
//    the model goes on counting for all 48 tokens without a constraint: the
//    same work as llama-batched-bench (64 prompt + 48 generated tokens per
//    sequence, no grammar), which it is compared with;
//  - chatMany(): chat prompts of about 64 tokens asking for a long list,
//    under a grammar of numbers and commas (so that no run stops early).
// Both against the same prompts called one by one (raw() / chat()).
// Total tokens/s = (prompt + generated tokens) / wall time, as
// llama-batched-bench's S t/s; generation tokens/s = generated / wall time.
// Generated tokens are counted from the results (Response::tokensGenerated(),
// or countTokens() of raw text, the same way on both sides).

declare(strict_types=1);

use Displace\Infer\Model;
use Displace\Infer\Prompt;

[$self, $modelPath] = $argv + [1 => null];
$tools = $argv[2] ?? __DIR__ . '/../target/llama-tools/bin';
$threads = (int) ($argv[3] ?? trim((string) shell_exec('nproc')));
if ($modelPath === null) {
    fwrite(STDERR, "usage: php bench/chat_many.php MODEL [TOOLS_BIN] [THREADS]\n");
    exit(2);
}
const PROMPT_TOKENS = 64;
const GEN_TOKENS = 48;
// Numbers and commas: what the prompts ask for, and no end-of-generation
// token in the middle of a number, so that runs do not stop short of 48.
const LIST_GRAMMAR = "root ::= item+\nitem ::= [0-9]+ \", \"";

$model = Model::load($modelPath, ['n_threads' => $threads]);

/** @return list<Prompt> */
function prompts(Model $model, int $n): array
{
    $make = fn (int $i, int $pad) => Prompt::system('You write long lists.' . str_repeat(' Be exact.', $pad))
        ->withUser("Record $i. List the numbers from $i to " . ($i + 500) . ', separated by commas, and nothing else.');
    // Pad the system message until the rendered prompt is ~64 tokens.
    $pad = 0;
    while ($model->chat($make(0, $pad), 1)->promptTokens() < PROMPT_TOKENS) {
        $pad++;
    }
    return array_map(fn (int $i) => $make($i, $pad), range(0, $n - 1));
}

/** Plain-text prompts of PROMPT_TOKENS tokens (with BOS) that count upwards from a different number each. */
function rawPrompts(Model $model, int $n): array
{
    $out = [];
    for ($i = 0; $i < $n; $i++) {
        $text = 'Counting:';
        for ($k = 100 * $i + 1; $model->countTokens($text) + 1 < PROMPT_TOKENS; $k++) {
            $candidate = "$text $k,";
            if ($model->countTokens($candidate) + 1 > PROMPT_TOKENS) {
                break;
            }
            $text = $candidate;
        }
        $out[] = $text;
    }
    return $out;
}

/** @param list<\Displace\Infer\Response> $responses */
function tally(array $responses): array
{
    $prompt = array_sum(array_map(fn ($r) => $r->promptTokens(), $responses));
    $gen = array_sum(array_map(fn ($r) => $r->tokensGenerated(), $responses));
    return [$prompt, $gen, min(array_map(fn ($r) => $r->tokensGenerated(), $responses))];
}

/** llama-batched-bench's total S t/s per batch size, the best of four runs. */
function batchedBench(string $tools, string $modelPath, int $threads): array
{
    $bin = "$tools/llama-batched-bench";
    if (!is_executable($bin)) {
        fwrite(STDERR, "no $bin (run bench/build-llama-tools.sh): skipping the llama.cpp comparison\n");
        return [];
    }
    $best = [];
    // Best of four runs: flash attention on and off, twice each.
    foreach (['on', 'off', 'on', 'off'] as $fa) {
        // Non-unified KV (the default; -kvu would unify it), one stream per
        // sequence as chatMany() uses; default batch 2048, ubatch 512.
        $cmd = sprintf(
            '%s -m %s -t %d -tb %d -c 4096 -b 2048 -ub 512 -fa %s -npp %d -ntg %d -npl 8,32 2>/dev/null',
            escapeshellarg($bin), escapeshellarg($modelPath), $threads, $threads, $fa, PROMPT_TOKENS, GEN_TOKENS,
        );
        foreach (explode("\n", (string) shell_exec($cmd)) as $line) {
            $cells = array_map('trim', explode('|', trim($line, " |\n")));
            // | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
            if (count($cells) === 10 && is_numeric($cells[0]) && is_numeric($cells[9])) {
                $b = (int) $cells[2];
                $best[$b] = max($best[$b] ?? 0.0, (float) $cells[9]);
            }
        }
    }
    return $best;
}

$reference = batchedBench($tools, $modelPath, $threads);
printf("model %s, %d threads\n", basename($modelPath), $threads);
foreach ([8, 32] as $n) {
    $texts = rawPrompts($model, $n);
    $promptTokens = array_sum(array_map(fn ($t) => $model->countTokens($t) + 1, $texts));
    $model->rawMany($texts, 1, 512, options: ['parallel' => $n]); // warm up, same context shape
    // Best of three, as llama-batched-bench gets the best of four.
    $tMany = INF;
    for ($run = 0; $run < 3; $run++) {
        $t = microtime(true);
        $many = $model->rawMany($texts, GEN_TOKENS, 512, options: ['parallel' => $n]);
        $tMany = min($tMany, microtime(true) - $t);
    }
    $gMany = array_sum(array_map(fn ($s) => $model->countTokens($s), $many));
    $t = microtime(true);
    $seq = [];
    foreach ($texts as $text) {
        $seq[] = $model->raw($text, GEN_TOKENS, 512, options: ['cache_prompt' => false]);
    }
    $tSeq = microtime(true) - $t;
    $gSeq = array_sum(array_map(fn ($s) => $model->countTokens($s), $seq));
    $totalMany = ($promptTokens + $gMany) / $tMany;
    printf(
        "%2d raw prompts, no grammar (%d prompt + %d generated tokens; the same outputs: %s)\n"
        . "   rawMany   %6.2fs  total %7.1f t/s  generation %7.1f t/s\n"
        . "   raw() x%-2d %6.2fs  total %7.1f t/s  generation %7.1f t/s\n"
        . "   rawMany / sequential: %.2fx\n",
        $n, $promptTokens, $gMany, $many === $seq ? 'yes' : 'NO',
        $tMany, $totalMany, $gMany / $tMany,
        $n, $tSeq, ($promptTokens + $gSeq) / $tSeq, $gSeq / $tSeq,
        $totalMany / (($promptTokens + $gSeq) / $tSeq),
    );
    if (isset($reference[$n])) {
        printf("   llama-batched-bench B=%d: %.1f t/s; rawMany is %.3fx of it (goal >= 0.95x)\n", $n, $reference[$n], $totalMany / $reference[$n]);
    }

    $prompts = prompts($model, $n);
    $options = ['parallel' => $n, 'grammar' => LIST_GRAMMAR];
    $model->chatMany(array_slice($prompts, 0, 1), 1, 512, options: $options); // warm up
    $t = microtime(true);
    $many = $model->chatMany($prompts, GEN_TOKENS, 512, options: $options);
    $tMany = microtime(true) - $t;
    [$pMany, $gMany, $minMany] = tally($many);

    $t = microtime(true);
    $seq = [];
    foreach ($prompts as $p) {
        $seq[] = $model->chat($p, GEN_TOKENS, 512, options: ['cache_prompt' => false, 'grammar' => LIST_GRAMMAR]);
    }
    $tSeq = microtime(true) - $t;
    [$pSeq, $gSeq] = tally($seq);

    $totalMany = ($pMany + $gMany) / $tMany;
    $totalSeq = ($pSeq + $gSeq) / $tSeq;
    printf(
        "%2d chat prompts under a grammar (%d prompt + %d generated tokens, fewest generated %d)\n"
        . "   chatMany  %6.2fs  total %7.1f t/s  generation %7.1f t/s\n"
        . "   chat() x%-2d %6.2fs  total %7.1f t/s  generation %7.1f t/s\n"
        . "   chatMany / sequential: %.2fx\n",
        $n, $pMany, $gMany, $minMany,
        $tMany, $totalMany, $gMany / $tMany,
        $n, $tSeq, $totalSeq, $gSeq / $tSeq,
        $totalMany / $totalSeq,
    );
    if ($minMany < GEN_TOKENS) {
        printf("   note: a prompt generated only %d tokens (goal %d)\n", $minMany, GEN_TOKENS);
    }
}
