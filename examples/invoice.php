<?php
// Free text into PHP objects: Schema::fromClass() derives the schema of an
// Invoice (nested line items, an enum currency, a date) from its typed
// properties and attributes; the model can only write JSON that satisfies it;
// Response::into() builds the Invoice.
//
// php -d extension=target/release/libinfer.so examples/invoice.php [MODEL]
declare(strict_types=1);

namespace Example;

use Displace\Infer\{Constraint, Description, Model, Prompt, Schema};

enum Currency: string
{
    case EUR = 'EUR';
    case USD = 'USD';
    case GBP = 'GBP';
}

final class LineItem
{
    public function __construct(
        #[Description('What was sold'), Constraint(maxLength: 30)]
        public readonly string $description,
        #[Constraint(minimum: 1)]
        public readonly int $quantity,
        #[Constraint(minimum: 0)]
        public readonly float $unitPrice,
    ) {
    }
}

#[Description('An invoice')]
final class Invoice
{
    /** @param list<LineItem> $items */
    public function __construct(
        #[Constraint(pattern: '^INV-[0-9]{3}$')]
        public readonly string $number,
        #[Constraint(maxLength: 40)]
        public readonly string $customer,
        public readonly Currency $currency,
        #[Constraint(format: 'date')]
        public readonly \DateTimeImmutable $date,
        #[Constraint(minItems: 1, maxItems: 4)]
        public readonly array $items,
        public readonly ?string $note = null,
    ) {
    }

    public function total(): float
    {
        return array_sum(array_map(fn (LineItem $i) => $i->quantity * $i->unitPrice, $this->items));
    }
}

// A worked example (one earlier turn) helps a small model more than
// instructions alone.
$prompt = Prompt::system('Extract the invoice as JSON, with each line item as written.')
    ->withUser('Invoice INV-207 to Bolt Ltd, 2023-11-20, in dollars: 2 cables at 4.00 each, 5 plugs at 1.20 each.')
    ->withAssistant('{"number": "INV-207", "customer": "Bolt Ltd", "currency": "USD", "date": "2023-11-20", "items": [{"description": "cable", "quantity": 2, "unitPrice": 4.0}, {"description": "plug", "quantity": 5, "unitPrice": 1.2}]}');

$model = Model::load($argv[1] ?? __DIR__ . '/../models/SmolLM2-135M-Instruct.Q4_1.gguf');
$text = 'Invoice INV-001 for ACME Corp, dated 2024-03-05, in euros: 3 widgets at 2.50 each, 1 gadget at 10.00.';

$response = $model->chat(
    $prompt->withUser($text),
    maxTokens: 400,
    options: ['schema' => Schema::fromClass(Invoice::class)],
);
$invoice = $response->into(Invoice::class);

printf("%s for %s, %s, %s\n", $invoice->number, $invoice->customer, $invoice->date->format('j M Y'), $invoice->currency->name);
foreach ($invoice->items as $item) {
    printf("  %d × %s at %.2f\n", $item->quantity, $item->description, $item->unitPrice);
}
printf("  total %.2f %s\n", $invoice->total(), $invoice->currency->value);
