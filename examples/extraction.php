<?php
// An extraction call: a fixed system prompt (instructions and, by default, a
// few worked examples, which a small model follows far better than
// instructions alone), a schema, and the note to read. Shared by
// examples/extract-endpoint.php and bench/fpm_endpoint.php.
declare(strict_types=1);

use Displace\Infer\{Model, Prompt, Response};

const EXTRACTION_INSTRUCTIONS = 'You read short notes about people and extract who they are. '
    . 'Output JSON only: the name, the age in years (an integer) and the city they live in, as written in the note.';

const EXTRACTION_EXAMPLES = <<<'TXT'

    Examples:
    Note: Ana works as a nurse in Madrid; she turned 28 in May.
    JSON: {"name": "Ana", "age": 28, "city": "Madrid"}
    Note: After forty years at sea, Captain Jonas Berg (71) settled in Bergen.
    JSON: {"name": "Jonas Berg", "age": 71, "city": "Bergen"}
    Note: Li Wei, a 19-year-old student, shares a flat in Shanghai with two friends.
    JSON: {"name": "Li Wei", "age": 19, "city": "Shanghai"}
    Note: Our neighbour Frank is 45 and has lived in Toronto since he was a child.
    JSON: {"name": "Frank", "age": 45, "city": "Toronto"}
    Note: At 33, the architect Sofia Rossi opened her own studio in Milan.
    JSON: {"name": "Sofia Rossi", "age": 33, "city": "Milan"}
    TXT;

const EXTRACTION_SCHEMA = [
    'type' => 'object',
    'properties' => [
        'name' => ['type' => 'string', 'maxLength' => 24],
        'age' => ['type' => 'integer', 'minimum' => 0, 'maximum' => 130],
        'city' => ['type' => 'string', 'maxLength' => 24],
    ],
    'required' => ['name', 'age', 'city'],
    'additionalProperties' => false,
];

/** Extract name, age and city from $note; $examples adds the worked examples to the system prompt. */
function extract_person(Model $model, string $note, bool $examples = true): Response
{
    $system = EXTRACTION_INSTRUCTIONS . ($examples ? EXTRACTION_EXAMPLES : '');
    return $model->chat(
        Prompt::system($system)->withUser("Note: $note"),
        maxTokens: 64,
        options: ['schema' => EXTRACTION_SCHEMA],
    );
}
