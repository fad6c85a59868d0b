<?php
// An extraction call: a fixed system prompt, a schema, and the document to
// read. Shared by examples/extract-endpoint.php and bench/fpm_endpoint.php.
declare(strict_types=1);

use Displace\Infer\{Model, Prompt, Response};

const EXTRACTION_SYSTEM = 'You read short notes about people and extract who they are. '
    . 'Output JSON only: the name, the age in years (an integer) and the city they live in, as written in the note.';

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

function extract_person(Model $model, string $note): Response
{
    return $model->chat(
        Prompt::system(EXTRACTION_SYSTEM)->withUser($note),
        maxTokens: 64,
        options: ['schema' => EXTRACTION_SCHEMA],
    );
}
