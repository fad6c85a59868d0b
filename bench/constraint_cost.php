<?php
// Per-token cost of generating under realistic JSON schemas against free
// decoding of the same number of tokens from the same prompt (goal:
// "constraints that cost nothing on real schemas", goal <= 1.05x).
//
//   php -d extension=target/release/libinfer.so bench/constraint_cost.php MODEL [PAIRS]
//
// For each schema: one constrained chat() call (maxTokens 96) fixes the token
// count n; the free call generates exactly n tokens (same prompt, no
// constraint, maxTokens n, `stop` none; a free run that ends early is
// reported). Both calls reuse the cached prompt (cache_prompt on, after a
// warm-up), so what differs is generation. Pairs run back to back and the
// figure is the median of the pairs' ratios, which cancels the slow patches
// of a shared machine better than a ratio of medians.

declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\Model;
use Displace\Infer\Prompt;

if ($argc < 2) {
    fwrite(STDERR, "usage: php -d extension=... bench/constraint_cost.php MODEL [PAIRS]\n");
    exit(2);
}
$model = Model::load($argv[1]);
$pairs = (int) ($argv[2] ?? 7);

$schemas = [
    'order extraction (enums, date, list of objects with a patterned SKU and a bounded quantity)' => [
        'prompt' => 'Extract the order as JSON: "Order from Ana Silva on 2026-03-14, paid by card, status shipped: '
            . '2 x SKU AB-1234 (blue mug), 1 x SKU CD-5678 (tea towel), 3 x SKU EF-9012 (coasters)."',
        'schema' => ['type' => 'object', 'properties' => [
            'customer' => ['type' => 'string', 'maxLength' => 40],
            'date' => ['type' => 'string', 'format' => 'date'],
            'payment' => ['enum' => ['card', 'cash', 'transfer']],
            'status' => ['enum' => ['pending', 'shipped', 'delivered', 'cancelled']],
            'items' => ['type' => 'array', 'minItems' => 1, 'maxItems' => 5, 'items' => ['type' => 'object', 'properties' => [
                'sku' => ['type' => 'string', 'pattern' => '^[A-Z]{2}-[0-9]{4}$'],
                'quantity' => ['type' => 'integer', 'minimum' => 1, 'maximum' => 99],
                'description' => ['type' => 'string', 'maxLength' => 30],
            ]]],
        ]],
    ],
    'event (date-time, enum, nested object, optional fields)' => [
        'prompt' => 'Turn this into JSON: "Team meeting in Room 4B at 2026-05-02T14:30:00Z, high priority, organised by '
            . 'Ben (ben@example.com), about the quarterly budget."',
        'schema' => ['type' => 'object', 'required' => ['title', 'start', 'priority'], 'properties' => [
            'title' => ['type' => 'string', 'maxLength' => 60],
            'start' => ['type' => 'string', 'format' => 'date-time'],
            'priority' => ['enum' => ['low', 'normal', 'high']],
            'room' => ['type' => 'string', 'maxLength' => 20],
            'organiser' => ['type' => 'object', 'properties' => [
                'name' => ['type' => 'string', 'maxLength' => 30],
                'email' => ['type' => 'string', 'format' => 'email'],
            ]],
        ]],
    ],
    'product review (bounded number, boolean, list of strings)' => [
        'prompt' => 'Summarise as JSON: "I rate this kettle 4.5 out of 5. It boils fast and looks great, but the lid is '
            . 'stiff. Would recommend."',
        'schema' => ['type' => 'object', 'properties' => [
            'product' => ['type' => 'string', 'maxLength' => 30],
            'rating' => ['type' => 'number', 'minimum' => 0, 'maximum' => 5],
            'recommended' => ['type' => 'boolean'],
            'pros' => ['type' => 'array', 'maxItems' => 4, 'items' => ['type' => 'string', 'maxLength' => 40]],
            'cons' => ['type' => 'array', 'maxItems' => 4, 'items' => ['type' => 'string', 'maxLength' => 40]],
        ]],
    ],
];

echo "| schema | tokens (constrained / free) | constrained ms/token | free ms/token | ratio (median of $pairs pairs) |\n";
echo "|---|---|---|---|---|\n";
$all = [];
foreach ($schemas as $name => ['prompt' => $text, 'schema' => $schema]) {
    $prompt = Prompt::user($text);
    $constrained = fn () => $model->chat($prompt, maxTokens: 96, options: ['schema' => $schema]);
    $warm = $constrained();
    $n = max(1, $warm->tokensGenerated());
    $free = fn () => $model->chat($prompt, maxTokens: $n);
    $freeWarm = $free();
    $ratios = [];
    $cMs = [];
    $fMs = [];
    for ($i = 0; $i < $pairs; $i++) {
        $t = hrtime(true);
        $c = $constrained();
        $cMs[] = (hrtime(true) - $t) / 1e6 / max(1, $c->tokensGenerated());
        $t = hrtime(true);
        $f = $free();
        $fMs[] = (hrtime(true) - $t) / 1e6 / max(1, $f->tokensGenerated());
        $ratios[] = end($cMs) / end($fMs);
    }
    $ratio = median($ratios);
    $all[] = $ratio;
    printf(
        "| %s | %d / %d | %.2f | %.2f | %.3f× |\n",
        $name, $warm->tokensGenerated(), $freeWarm->tokensGenerated(), median($cMs), median($fMs), $ratio,
    );
}
printf("\nWorst schema: %.3f× (goal ≤ 1.05×)\n", max($all));
