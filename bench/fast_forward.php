<?php
// Fast-forward decoding (option `fast_forward`): what the constraint forces is
// appended without sampling and evaluated in one batch. Measured in one run,
// interleaved, against the same calls with it off, against llama.cpp's CLI
// (llama-completion, same grammar, same threads), and against free decoding
// of as many tokens.
//
//   php -d extension=target/release/libinfer.so bench/fast_forward.php MODEL TOOLS_DIR [THREADS] [ROUNDS]
//
// 1. The SPEC's extraction call: fast-forward on against off (goal <= 0.75x)
//    and against llama-completion's compute (goal <= 0.7x).
// 2. Realistic extraction schemas: time per output token with it on, against
//    free decoding of as many tokens from the same prompt (goal <= 0.8x), and
//    the share of forced tokens.
// 3. chatMany() of 32 extraction prompts, on against off.
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

[$model_path, $tools, $threads, $rounds] = model_and_tools($argv, 'bench/fast_forward.php MODEL TOOLS_DIR [THREADS] [ROUNDS]');

$model = Model::load($model_path, ['n_threads' => $threads]);
$name = basename($model_path);
echo "## Fast-forward: $name, $threads threads, $rounds rounds, medians\n\n";

// 1. The extraction call.
[$system, $user, $schema, $prompt, $gbnf_file] = spec_extraction();
$extract = fn (bool $ff) => $model->chat($prompt, maxTokens: 128, options: ['schema' => $schema, 'cache_prompt' => false, 'fast_forward' => $ff]);
$extract(true);
$extract(false);
[$on, $off, $cli] = [[], [], []];
for ($i = 0; $i < $rounds; $i++) {
    [$ms, $r_on] = ms(fn () => $extract(true));
    $on[] = $ms;
    [$ms, $r_off] = ms(fn () => $extract(false));
    $off[] = $ms;
    $cli[] = completion($tools, $model_path, $threads, chatml($system, $user), 128, $gbnf_file)['compute'];
}
[$on, $off, $cli] = [median($on), median($off), median($cli)];
$t = $r_on->timings();
echo "| figure | fast-forward on | baseline (same run) | ratio | goal |\n|---|--:|--:|--:|---|\n";
printf("| extraction call (%d tokens, %d forced), against it off | %.1f ms | %.1f ms | %.3f× | ≤ 0.75× |\n",
    $r_on->tokensGenerated(), $t['forced_tokens'], $on, $off, $on / $off);
printf("| extraction call, against llama-completion's compute (same grammar) | %.1f ms | %.1f ms | %.3f× | ≤ 0.7× |\n",
    $on, $cli, $on / $cli);
if ($r_on->text() !== $r_off->text()) {
    fwrite(STDERR, "note: the texts differ: on {$r_on->text()} / off {$r_off->text()}\n");
}

// 2. Realistic schemas: per output token, against free decoding.
$schemas = [
    'person (3 required keys)' => ['Extract: "Maria is 31 years old and lives in Lisbon, she works as a nurse."',
        ['type' => 'object', 'required' => ['name', 'age', 'city', 'job'], 'additionalProperties' => false, 'properties' => [
            'name' => ['type' => 'string', 'maxLength' => 40], 'age' => ['type' => 'integer', 'minimum' => 0, 'maximum' => 130],
            'city' => ['type' => 'string', 'maxLength' => 40], 'job' => ['type' => 'string', 'maxLength' => 40]]]],
    'order (nested list of objects, enums)' => ['Extract the order as JSON: "Order from Ana Silva, paid by card, status shipped: 2 x blue mug, 1 x tea towel, 3 x coasters."',
        ['type' => 'object', 'required' => ['customer', 'payment', 'status', 'items'], 'additionalProperties' => false, 'properties' => [
            'customer' => ['type' => 'string', 'maxLength' => 40],
            'payment' => ['enum' => ['credit card', 'cash on delivery', 'bank transfer']],
            'status' => ['enum' => ['pending payment', 'shipped to customer', 'delivered', 'cancelled']],
            'items' => ['type' => 'array', 'minItems' => 1, 'maxItems' => 4, 'items' => ['type' => 'object',
                'required' => ['quantity', 'description'], 'additionalProperties' => false, 'properties' => [
                    'quantity' => ['type' => 'integer', 'minimum' => 1, 'maximum' => 99],
                    'description' => ['type' => 'string', 'maxLength' => 30]]]]]]],
    'event (nested object, date-time)' => ['Turn this into JSON: "Team meeting in Room 4B at 2026-05-02T14:30:00Z, high priority, organised by Ben (ben@example.com)."',
        ['type' => 'object', 'required' => ['title', 'start', 'priority', 'room', 'organiser'], 'additionalProperties' => false, 'properties' => [
            'title' => ['type' => 'string', 'maxLength' => 60], 'start' => ['type' => 'string', 'format' => 'date-time'],
            'priority' => ['enum' => ['low', 'normal', 'high']], 'room' => ['type' => 'string', 'maxLength' => 20],
            'organiser' => ['type' => 'object', 'required' => ['name', 'email'], 'additionalProperties' => false, 'properties' => [
                'name' => ['type' => 'string', 'maxLength' => 30], 'email' => ['type' => 'string', 'format' => 'email']]]]]],
];
echo "\n| schema | tokens (forced) | ms/token, on | ms/token, free | ratio | ms/token, off | goal |\n|---|--:|--:|--:|--:|--:|---|\n";
foreach ($schemas as $label => [$text, $s]) {
    $p = Prompt::user($text);
    $ask = fn (array $o, int $n) => $model->chat($p, maxTokens: $n, options: $o + ['cache_prompt' => true]);
    $first = $ask(['schema' => $s, 'fast_forward' => true], 160);
    $n = $first->tokensGenerated();
    $ask([], $n);
    [$on_r, $free_r, $off_r] = [[], [], []];
    for ($i = 0; $i < $rounds; $i++) {
        [$ms, $r] = ms(fn () => $ask(['schema' => $s, 'fast_forward' => true], 160));
        $on_r[] = $ms / max(1, $r->tokensGenerated());
        [$ms, $r] = ms(fn () => $ask(['stop' => ["\u{0}never"]], $n));
        $free_r[] = $ms / max(1, $r->tokensGenerated());
        [$ms, $r] = ms(fn () => $ask(['schema' => $s, 'fast_forward' => false], 160));
        $off_r[] = $ms / max(1, $r->tokensGenerated());
    }
    [$a, $b, $c] = [median($on_r), median($free_r), median($off_r)];
    printf("| %s | %d (%d, %.0f%%) | %.2f | %.2f | %.3f× | %.2f | ≤ 0.8× |\n", $label, $n, $first->timings()['forced_tokens'],
        100 * $first->timings()['forced_tokens'] / max(1, $n), $a, $b, $a / $b, $c);
}

// 3. chatMany() of 32 extraction prompts, 8 at a time.
$people = ['Maria', 'João', 'Ana', 'Pedro', 'Inês', 'Rui', 'Sofia', 'Tiago'];
$cities = ['Lisbon', 'Porto', 'Braga', 'Faro'];
$prompts = [];
for ($i = 0; $i < 32; $i++) {
    $prompts[] = Prompt::system($system)->withUser(sprintf('%s is %d years old and lives in %s.', $people[$i % 8], 20 + $i, $cities[$i % 4]));
}
$many = fn (bool $ff) => $model->chatMany($prompts, maxTokens: 64, options: ['schema' => $schema, 'fast_forward' => $ff, 'cache_prompt' => false, 'parallel' => 8]);
[$on, $off, $forced, $tokens] = [[], [], 0, 0];
for ($i = 0; $i < max(1, intdiv($rounds, 2)); $i++) {
    [$ms, $rs] = ms(fn () => $many(true));
    $on[] = $ms;
    $tokens = array_sum(array_map(fn ($r) => $r->tokensGenerated(), $rs));
    $forced = array_sum(array_map(fn ($r) => $r->timings()['forced_tokens'], $rs));
    [$ms, $rs_off] = ms(fn () => $many(false));
    $off[] = $ms;
    $tokens_off = array_sum(array_map(fn ($r) => $r->tokensGenerated(), $rs_off));
}
[$on, $off] = [median($on), median($off)];
printf("\n| chatMany() of 32 extraction prompts, parallel 8 | %.0f tokens/s on (%d of %d forced) | %.0f tokens/s off | %.3f× |\n",
    $tokens * 1000 / $on, $forced, $tokens, $tokens_off * 1000 / $off, ($tokens / $on) / ($tokens_off / $off));
