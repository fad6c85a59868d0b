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
        $this->assertThrows(InferException::class, 'unsupported keyword "uniqueItems" at /properties/tags', fn () => Grammar::fromSchema(['properties' => ['tags' => ['uniqueItems' => true]]]));
        $this->assertThrows(InferException::class, 'schema must be an array or a JSON string, got float', fn () => Grammar::fromSchema(1.5));
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
