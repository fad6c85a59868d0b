<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Grammar;
use Displace\Infer\InferException;

final class GrammarTest extends InferTestCase
{
    public function testFromSchemaReturnsGbnfWithARootRule(): void
    {
        $g = Grammar::fromSchema(['type' => 'object', 'properties' => ['ok' => ['type' => 'boolean']]]);
        $this->assertStringStartsWith('root ::= ', $g);
        $this->assertStringContainsString('"\\"ok\\": " boolean "}"', $g);
        Grammar::check($g);
    }

    public function testFromSchemaAcceptsJsonText(): void
    {
        $this->assertSame(Grammar::fromSchema(['type' => 'integer', 'minimum' => 0]), Grammar::fromSchema('{"type": "integer", "minimum": 0}'));
    }

    public function testFromSchemaAcceptsObjects(): void
    {
        $schema = json_decode('{"type": "object", "properties": {"a": {"type": "string"}}, "required": []}');
        $this->assertSame(Grammar::fromSchema(json_decode(json_encode($schema), true)), Grammar::fromSchema($schema));
    }

    public function testEmptyPhpArraysStandForEmptyObjects(): void
    {
        $this->assertSame(Grammar::fromSchema('{"type": "object", "properties": {}}'), Grammar::fromSchema(['type' => 'object', 'properties' => []]));
        $this->assertSame(Grammar::fromSchema('true'), Grammar::fromSchema([]));
    }

    public function testFromSchemaErrorsAreInferExceptions(): void
    {
        $this->assertThrows(InferException::class, 'unsupported keyword "unevaluatedItems" at /properties/tags', fn () => Grammar::fromSchema(['properties' => ['tags' => ['unevaluatedItems' => ['type' => 'string']]]]));
        $this->assertThrows(InferException::class, 'keyword "uniqueItems" can only be enforced when every item comes from a finite set of at most 64 values (booleans, null, enums, consts, integer ranges): the grammar cannot compare items at /properties/tags', fn () => Grammar::fromSchema(['properties' => ['tags' => ['type' => 'array', 'items' => ['type' => 'string'], 'uniqueItems' => true]]]));
        $this->assertThrows(InferException::class, 'schema must be an array, a JSON string or a Displace\\Infer\\Schema, got float', fn () => Grammar::fromSchema(1.5));
        $this->assertThrows(InferException::class, 'unknown format "url" at /properties/home (did you mean "uri"?)', fn () => Grammar::fromSchema(['properties' => ['home' => ['type' => 'string', 'format' => 'url']]]));
        $this->assertThrows(InferException::class, 'keyword "multipleOf" 0 must be greater than 0 at /properties/n', fn () => Grammar::fromSchema(['properties' => ['n' => ['type' => 'number', 'multipleOf' => 0]]]));
    }

    /**
     * A format no JSON Schema vocabulary defines is an annotation: the grammar
     * is the one of the schema without it, as a validator ignores it.
     */
    public function testCustomFormatsAreAnnotations(): void
    {
        $this->assertSame(
            Grammar::fromSchema(['type' => 'string', 'maxLength' => 8]),
            Grammar::fromSchema(['type' => 'string', 'maxLength' => 8, 'format' => 'textarea']),
        );
    }

    /**
     * Under 'json-schema' an object schema means what a validator reads in it:
     * the same grammar as the strict reading of the schema with `required: []`
     * and `additionalProperties: true` written out.
     */
    public function testJsonSchemaDefaultsReadObjectsAsAValidatorDoes(): void
    {
        $implicit = ['type' => 'object', 'properties' => ['a' => ['type' => 'integer'], 'b' => ['type' => 'string']]];
        $explicit = $implicit + ['required' => [], 'additionalProperties' => true];
        $this->assertSame(Grammar::fromSchema($explicit), Grammar::fromSchema($implicit, ['schema_defaults' => 'json-schema']));
        $this->assertNotSame(Grammar::fromSchema($implicit), Grammar::fromSchema($implicit, ['schema_defaults' => 'json-schema']));
        $this->assertSame(Grammar::fromSchema($implicit), Grammar::fromSchema($implicit, ['schema_defaults' => 'strict']));
        // What is written out stays as written.
        $closed = $implicit + ['required' => ['a'], 'additionalProperties' => false];
        $this->assertSame(Grammar::fromSchema($closed), Grammar::fromSchema($closed, ['schema_defaults' => 'json-schema']));
    }

    /**
     * `{"type": "object", "minProperties": 1, "properties": {"a": {}}}` with
     * more than one key: nothing in the strict reading (only "a" may appear),
     * satisfiable in JSON Schema's.
     */
    public function testJsonSchemaDefaultsAcceptWhatOnlyOtherKeysCanSatisfy(): void
    {
        $schema = ['type' => 'object', 'properties' => ['a' => ['const' => 1]], 'minProperties' => 2];
        $this->assertThrows(InferException::class, 'can never be satisfied', fn () => Grammar::fromSchema($schema));
        Grammar::check(Grammar::fromSchema($schema, ['schema_defaults' => 'json-schema']));
        $this->addToAssertionCount(1);
    }

    /** @return array<string, array{array<mixed>, string}> */
    public static function badFromSchemaOptions(): array
    {
        return [
            'unknown option' => [['schema_default' => 'strict'], 'option "schema_default" is not a known option (known: schema_defaults)'],
            'unknown policy' => [['schema_defaults' => 'loose'], "option \"schema_defaults\" must be one of 'strict', 'json-schema', got 'loose'"],
            'policy of the wrong type' => [['schema_defaults' => true], "option \"schema_defaults\" must be one of 'strict', 'json-schema', got bool"],
            'integer key' => [['strict'], 'option "0" is an integer key'],
        ];
    }

    /** @dataProvider badFromSchemaOptions */
    public function testFromSchemaOptionErrorsNameTheOption(array $options, string $message): void
    {
        $this->assertThrows(InferException::class, $message, fn () => Grammar::fromSchema(['type' => 'string'], $options));
    }

    public function testCheckAcceptsValidGrammars(): void
    {
        Grammar::check('root ::= "yes" | "no"');
        Grammar::check("# comment\nroot ::= item+\nitem ::= [a-z] \" \"?\n");
        $this->addToAssertionCount(2);
    }

    /** @return array<string, array{string, string}> */
    public static function badGrammars(): array
    {
        return [
            'empty' => ['', 'grammar is empty'],
            'no root' => ['answer ::= "x"', 'line 1, column 1: grammar has no "root" rule'],
            'undefined rule' => ["root ::= item\n", 'undefined rule "item"'],
            'unterminated string' => ['root ::= "abc', 'line 1, column'],
            'inverted range' => ['root ::= [z-a]', 'inverted'],
            'missing ::=' => ["root ::= \"a\"\nfoo \"b\"", 'line 2'],
            'left recursion' => ["root ::= root \"a\" | \"b\"", 'left-recursive'],
            'huge repetition' => ['root ::= "a"{5000000000}', 'exceeds the limit'],
            'matches nothing' => ["root ::= a\na ::= \"x\" a", 'matches nothing'],
        ];
    }

    /** @dataProvider badGrammars */
    public function testCheckReportsWhereAGrammarIsWrong(string $gbnf, string $message): void
    {
        $this->assertThrows(InferException::class, 'invalid grammar: ', fn () => Grammar::check($gbnf));
        $this->assertThrows(InferException::class, $message, fn () => Grammar::check($gbnf));
    }
}
