<?php
// Prompt lookup (option `lookup`): proposals copied from the prompt and the
// answer, kept where the sampler picks them. Measured in one run,
// interleaved, against the same calls without it, and against llama.cpp's
// own llama-lookup (same llama.cpp, same prompt text, grammar and threads;
// its decode time against llama-completion's, which is its own baseline).
//
//   php -d extension=target/release/libinfer.so bench/lookup.php MODEL TOOLS_DIR [THREADS] [ROUNDS]
//
// Workloads: a copy-heavy extraction (an invoice with addresses and line
// items), the SPEC's extraction, and free text with nothing to copy.
// Figures are generation time (after the prompt is read: lookup cannot
// change the prompt's), medians of ROUNDS.
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Grammar, Model, Prompt};

[$model_path, $tools, $threads, $rounds] = model_and_tools($argv, 'bench/lookup.php MODEL TOOLS_DIR [THREADS] [ROUNDS]');
// A model (and so a context) per setting: a context carries what it
// learned about proposals from one call to the next.
$model = Model::load($model_path, ['n_threads' => $threads]);
$name = basename($model_path);

$invoice = 'Invoice INV-2024-0117, issued 2024-03-15 by Acme Office Supplies GmbH, Hauptstrasse 12, 10115 Berlin, Germany, '
    . 'to Maria Fernanda Oliveira, Rua das Flores 45, 1200-195 Lisbon, Portugal. Items: 2 x Ergonomic office chair at 249.00 EUR; '
    . '1 x Standing desk frame at 389.50 EUR. Total due: 887.50 EUR.';
$invoice_schema = ['type' => 'object', 'additionalProperties' => false,
    'required' => ['invoice_number', 'date', 'seller', 'seller_address', 'buyer', 'buyer_address', 'items', 'total'],
    'properties' => [
        'invoice_number' => ['type' => 'string'], 'date' => ['type' => 'string'], 'seller' => ['type' => 'string'],
        'seller_address' => ['type' => 'string'], 'buyer' => ['type' => 'string'], 'buyer_address' => ['type' => 'string'],
        'items' => ['type' => 'array', 'maxItems' => 3, 'items' => ['type' => 'object', 'additionalProperties' => false,
            'required' => ['quantity', 'description', 'unit_price'],
            'properties' => ['quantity' => ['type' => 'integer'], 'description' => ['type' => 'string'], 'unit_price' => ['type' => 'number']]]],
        'total' => ['type' => 'number'],
    ]];
[$spec_system, $spec_user, $spec_schema] = spec_extraction();
$workloads = [
    'copy-heavy extraction (invoice)' => [Prompt::system('Extract the invoice as JSON. Copy names, addresses, numbers and dates exactly as written.')->withUser($invoice), $invoice_schema, 200],
    'SPEC extraction' => [Prompt::system($spec_system)->withUser($spec_user), $spec_schema, 128],
    'free text, nothing to copy' => [Prompt::user('Write a short story about a lighthouse keeper who finds a message in a bottle.'), null, 128],
];
$modes = ['off' => false, 'on (default settings)' => true, 'fixed proposals of 4' => ['adaptive' => false, 'tokens' => 4]];
$models = [];
foreach ($modes as $mode => $_) {
    $models[$mode] = $mode === 'off' ? $model : Model::load($model_path, ['n_threads' => $threads]);
}

echo "## Prompt lookup: $name, $threads threads, $rounds rounds, medians of generation time\n\n";
echo "| workload | lookup | generation | against off | tokens | steps | tokens per step | proposed | kept | kept share | same text as off |\n";
echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n";
foreach ($workloads as $workload => [$prompt, $schema, $max]) {
    $options = ['cache_prompt' => false] + ($schema === null ? [] : ['schema' => $schema]);
    $times = [];
    $last = [];
    for ($i = 0; $i <= $rounds; $i++) {
        // Each round in another order: a call right after another model's
        // call runs a little slower (its pool had gone to sleep), so no mode
        // may always take the same place.
        $names = array_keys($modes);
        $turn = array_merge(array_slice($names, $i % count($names)), array_slice($names, 0, $i % count($names)));
        foreach ($turn as $mode) {
            $lookup = $modes[$mode];
            $r = $models[$mode]->chat($prompt, maxTokens: $max, options: $options + ['lookup' => $lookup]);
            if ($i > 0) { // the first round warms up
                $times[$mode][] = $r->timings()['generation_ms'];
            }
            $last[$mode] = $r;
        }
    }
    $base = median($times['off']);
    foreach ($modes as $mode => $_) {
        $r = $last[$mode];
        $t = $r->timings();
        $ms = median($times[$mode]);
        printf("| %s | %s | %.0f ms | %.3f× | %d | %d | %.2f | %d | %d | %s | %s |\n", $workload, $mode, $ms, $base / $ms,
            $r->tokensGenerated(), $t['generation_steps'], $r->tokensGenerated() / max(1, $t['generation_steps']),
            $t['lookup_proposed'], $t['lookup_accepted'],
            $t['lookup_proposed'] > 0 ? sprintf('%.0f%%', 100 * $t['lookup_accepted'] / $t['lookup_proposed']) : '–',
            $r->text() === $last['off']->text() ? 'yes' : 'no');
    }
}

// llama.cpp's own: llama-lookup's decode time against llama-completion's
// eval + sampling, same prompt text and grammar (greedy, flash attention off
// as the engine runs it, draft of 3: its default).
echo "\n| workload | llama-lookup decode | llama-completion decode | ratio | llama-lookup proposed | kept |\n|---|--:|--:|--:|--:|--:|\n";
foreach (['copy-heavy extraction (invoice)', 'SPEC extraction'] as $workload) {
    [$prompt, $schema, $max] = $workloads[$workload];
    $text = $model->renderPrompt($prompt);
    $gbnf = tempnam(sys_get_temp_dir(), 'gbnf');
    file_put_contents($gbnf, Grammar::fromSchema($schema));
    $file = tempnam(sys_get_temp_dir(), 'prompt');
    file_put_contents($file, $text . "\n"); // llama-lookup's -f drops one trailing newline
    [$lk, $cm, $proposed, $kept] = [[], [], 0, 0];
    for ($i = 0; $i < $rounds; $i++) {
        [$code, $out, $err] = run_command(["$tools/llama-lookup", '-m', $model_path, '-t', (string) $threads, '-f', $file,
            '--grammar-file', $gbnf, '--temp', '0', '-n', (string) $max, '-fa', 'off', '-c', '2048']);
        if ($code !== 0 || !preg_match('/decoded\s+(\d+) tokens in\s+([0-9.]+) seconds/', $err, $m)) {
            fwrite(STDERR, "llama-lookup failed ($code):\n$err\n");
            exit(1);
        }
        $lk[] = (float) $m[2] * 1000;
        preg_match('/n_drafted\s*=\s*(\d+)/', $err, $d);
        preg_match('/n_accept\s*=\s*(\d+)/', $err, $a);
        [$proposed, $kept] = [(int) ($d[1] ?? 0), (int) ($a[1] ?? 0)];
        $c = completion($tools, $model_path, $threads, $text, $max, $gbnf);
        $cm[] = $c['compute'] - $c['prompt_ms'];
    }
    printf("| %s | %.0f ms | %.0f ms | %.3f× | %d | %d |\n", $workload, median($lk), median($cm), median($cm) / median($lk), $proposed, $kept);
}
