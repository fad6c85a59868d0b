<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Constraint;
use Displace\Infer\Description;
use Displace\Infer\Grammar;
use Displace\Infer\InferenceException;
use Displace\Infer\InferException;
use Displace\Infer\ListOf;
use Displace\Infer\Prompt;
use Displace\Infer\Response;
use Displace\Infer\Schema;
use Displace\Infer\Tests\Classes;

require_once __DIR__ . '/support/schema-classes.php';

/**
 * The Schema builder, Schema::fromClass() and Response::into(). Built
 * schemas are judged against hand-written JSON Schemas (the grammar the
 * converter makes of each must be the same), answers against PHP's own
 * checks of the values.
 */
final class SchemaTest extends InferTestCase
{
    private const NS = 'Displace\\Infer\\Tests\\Classes\\';

    /** A reply forced to be exactly `$json` by a one-string grammar. */
    private static function reply(string $json, int $maxTokens = 256): Response
    {
        $literal = '"' . addcslashes($json, "\\\"\n\r\t") . '"';
        return self::model()->chat(Prompt::user('Answer.'), maxTokens: $maxTokens, options: ['grammar' => "root ::= $literal"]);
    }

    // --- the builder -------------------------------------------------------

    public function testTheBuilderWritesWhatAHandWrittenSchemaSays(): void
    {
        $built = Schema::object([
            Schema::string('name')->required()->minLength(1)->maxLength(40)->description('Full name'),
            Schema::integer('age')->required()->minimum(0)->maximum(130),
            'email' => Schema::string()->format('email')->nullable(),
            Schema::array(Schema::string()->pattern('^[a-z]+$'), 'tags')->minItems(1)->maxItems(3)->required(),
            Schema::enum(['admin', 'user'], 'role')->required(),
            Schema::anyOf([Schema::number(), Schema::boolean()], 'score'),
            Schema::object([Schema::string('city')->required()], 'address')->nullable()->required(),
        ]);
        $expected = ['type' => 'object', 'properties' => [
            'name' => ['type' => 'string', 'minLength' => 1, 'maxLength' => 40, 'description' => 'Full name'],
            'age' => ['type' => 'integer', 'minimum' => 0, 'maximum' => 130],
            'email' => ['type' => ['string', 'null'], 'format' => 'email'],
            'tags' => ['type' => 'array', 'items' => ['type' => 'string', 'pattern' => '^[a-z]+$'], 'minItems' => 1, 'maxItems' => 3],
            'role' => ['enum' => ['admin', 'user']],
            'score' => ['anyOf' => [['type' => 'number'], ['type' => 'boolean']]],
            'address' => ['type' => ['object', 'null'], 'properties' => ['city' => ['type' => 'string']], 'required' => ['city'], 'additionalProperties' => false],
        ], 'required' => ['name', 'age', 'tags', 'role', 'address'], 'additionalProperties' => false];
        $this->assertEquals($expected, $built->toArray());
        $this->assertSame(Grammar::fromSchema($expected), Grammar::fromSchema($built));
        $this->assertSame(json_encode($expected), json_encode($built));
        $this->assertSame(json_encode($expected), $built->toJson());
    }

    public function testEachStepReturnsANewSchemaAndLeavesTheOldOne(): void
    {
        $base = Schema::string('code');
        $longer = $base->minLength(3);
        $required = $base->required();
        $this->assertSame(['type' => 'string'], $base->toArray());
        $this->assertSame(['type' => 'string', 'minLength' => 3], $longer->toArray());
        $this->assertFalse($base->isRequired());
        $this->assertTrue($required->isRequired());
        $this->assertFalse($required->required(false)->isRequired());
        $this->assertSame('code', $base->name());
        $this->assertNull(Schema::string()->name());
    }

    public function testNullableAddsNullToEveryKind(): void
    {
        $this->assertSame(['type' => ['integer', 'null']], Schema::integer()->nullable()->toArray());
        $this->assertSame(['enum' => ['a', null]], Schema::enum(['a'])->nullable()->toArray());
        $this->assertSame(['anyOf' => [['type' => 'string'], ['type' => 'integer'], ['type' => 'null']]], Schema::anyOf([Schema::string(), Schema::integer()])->nullable()->toArray());
        $this->assertSame(['type' => 'null'], Schema::null()->nullable()->toArray());
        $this->assertSame(['type' => 'string'], Schema::string()->nullable()->nullable(false)->toArray());
    }

    public function testEnumTakesBackedAndUnitCases(): void
    {
        $this->assertSame(['enum' => ['EUR', 'USD']], Schema::enum(Classes\Currency::cases())->toArray());
        $this->assertSame(['enum' => [1, 2]], Schema::enum(Classes\Priority::cases())->toArray());
        $this->assertSame(['enum' => ['Small', 'Large']], Schema::enum(Classes\Size::cases())->toArray());
    }

    public function testASchemaIsTheSchemaOptionOfChat(): void
    {
        $p = Prompt::system('Extract the data. Output JSON only.')->withUser('Maria is 31 years old and lives in Lisbon.');
        $built = Schema::object([Schema::string('name')->required(), Schema::integer('age')->required(), Schema::string('city')->required()]);
        $array = ['type' => 'object', 'properties' => ['name' => ['type' => 'string'], 'age' => ['type' => 'integer'], 'city' => ['type' => 'string']]];
        $this->assertSame(
            self::model()->chat($p, options: ['schema' => $array])->text(),
            self::model()->chat($p, options: ['schema' => $built])->text(),
        );
    }

    public function testConstraintErrorsNameTheProperty(): void
    {
        $this->assertThrows(InferException::class, 'property "city": minimum applies to integer and number schemas, not to string ones', fn () => Schema::string('city')->minimum(3));
        $this->assertThrows(InferException::class, 'the integer schema: pattern applies to string schemas, not to integer ones', fn () => Schema::integer()->pattern('x'));
        $this->assertThrows(InferException::class, 'property "tags": minLength applies to string schemas, not to array ones', fn () => Schema::array(Schema::string(), 'tags')->minLength(1));
        $this->assertThrows(InferException::class, 'property "n": minItems applies to array schemas, not to integer ones', fn () => Schema::integer('n')->minItems(1));
        $this->assertThrows(InferException::class, 'property "code": minLength must be a non-negative integer, got -1', fn () => Schema::string('code')->minLength(-1));
        $this->assertThrows(InferException::class, 'property "n": multipleOf must be a number greater than 0, got -2', fn () => Schema::number('n')->multipleOf(-2));
        $this->assertThrows(InferException::class, 'property "code": minLength 5 is greater than maxLength 2', fn () => Schema::string('code')->maxLength(2)->minLength(5));
        $this->assertThrows(InferException::class, 'property "n": minimum 2 is greater than maximum 1.5', fn () => Schema::number('n')->maximum(1.5)->minimum(2));
        $this->assertThrows(InferException::class, 'property "mail": unknown format "emial" (did you mean "email"?)', fn () => Schema::string('mail')->format('emial'));
        $this->assertThrows(InferException::class, 'property "code": pattern "(": ', fn () => Schema::string('code')->pattern('('));
        $this->assertThrows(InferException::class, 'property "n": schema can never be satisfied', fn () => Schema::integer('n')->exclusiveMinimum(5)->exclusiveMaximum(6));
    }

    public function testStructuralErrors(): void
    {
        $this->assertThrows(InferException::class, 'the object schema: property 1 has no name (give it one, as in Schema::string(\'city\'), or use a string key)', fn () => Schema::object([Schema::string('a'), Schema::string()]));
        $this->assertThrows(InferException::class, 'property "person": property "a" is given twice', fn () => Schema::object([Schema::string('a'), 'a' => Schema::integer()], 'person'));
        $this->assertThrows(InferException::class, 'the object schema: the key "b" and the name "a" of its schema differ', fn () => Schema::object(['b' => Schema::string('a')]));
        $this->assertThrows(InferException::class, 'property "currency": enum needs at least one value', fn () => Schema::enum([], 'currency'));
        $this->assertThrows(InferException::class, 'the enum schema: enum lists "x" twice', fn () => Schema::enum(['x', 'y', 'x']));
        $this->assertThrows(InferException::class, 'the anyOf schema: anyOf needs at least one schema', fn () => Schema::anyOf([]));
        $this->assertThrows(\TypeError::class, 'Schema::object(): entry "city" must be a Displace\\Infer\\Schema, got array', fn () => Schema::object(['city' => ['type' => 'string']]));
        $this->assertThrows(\TypeError::class, 'Schema::anyOf(): entry 1 must be a Displace\\Infer\\Schema, got string', fn () => Schema::anyOf([Schema::string(), 'integer']));
        $this->assertThrows(\TypeError::class, 'Schema::enum(): values must be a list; entry 0 has key "a"', fn () => Schema::enum(['a' => 1]));
        $this->assertThrows(\TypeError::class, 'Schema: minimum must be a finite int or float, got float NAN', fn () => Schema::number()->minimum(NAN));
        $this->assertThrows(\TypeError::class, 'Schema: maximum must be a finite int or float, got string', fn () => Schema::number()->maximum('3'));
        $this->assertThrows(InferException::class, 'Displace\\Infer\\Schema cannot be created with new; use Schema::object(), Schema::string(), … or Schema::fromClass()', fn () => new Schema());
    }

    // --- Schema::fromClass() -------------------------------------------------

    public function testFromClassDerivesTheInvoiceSchema(): void
    {
        $item = ['type' => 'object', 'properties' => [
            'description' => ['type' => 'string', 'maxLength' => 30, 'description' => 'What was sold'],
            'quantity' => ['type' => 'integer', 'minimum' => 1],
            'unitPrice' => ['type' => 'number', 'minimum' => 0],
        ], 'required' => ['description', 'quantity', 'unitPrice'], 'additionalProperties' => false];
        $expected = ['type' => 'object', 'properties' => [
            'number' => ['type' => 'string', 'pattern' => '^INV-[0-9]{3}$'],
            'customer' => ['type' => 'string', 'maxLength' => 40],
            'currency' => ['enum' => ['EUR', 'USD']],
            'date' => ['type' => 'string', 'format' => 'date'],
            'items' => ['type' => 'array', 'items' => $item, 'minItems' => 1, 'maxItems' => 4],
            'note' => ['type' => ['string', 'null']],
        ], 'required' => ['number', 'customer', 'currency', 'date', 'items'], 'additionalProperties' => false, 'description' => 'An invoice'];
        $derived = Schema::fromClass(Classes\Invoice::class);
        $this->assertEquals($expected, $derived->toArray());
        $this->assertSame(Grammar::fromSchema($expected), Grammar::fromSchema($derived));
    }

    public function testPublicInstancePropertiesOnlyAndDefaultsMakeThemOptional(): void
    {
        $this->assertSame(['type' => 'object', 'properties' => [
            'name' => ['type' => 'string'], 'age' => ['type' => 'integer'], 'city' => ['type' => ['string', 'null']],
        ], 'required' => ['name', 'age'], 'additionalProperties' => false], Schema::fromClass(Classes\Person::class)->toArray());
        $this->assertSame(['mode'], Schema::fromClass(Classes\Settings::class)->toArray()['required']);
    }

    public function testListItemTypesFromAttributesAndDocblocks(): void
    {
        $props = Schema::fromClass(Classes\Lists::class)->toArray()['properties'];
        $item = Schema::fromClass(Classes\LineItem::class)->toArray();
        foreach (['a', 'b', 'c'] as $k) {
            $this->assertEquals(['type' => 'array', 'items' => $item], $props[$k], $k);
        }
        $this->assertSame(['type' => 'array', 'items' => ['type' => 'string']], $props['d']);
        $this->assertSame(['type' => 'array', 'items' => ['type' => 'integer']], $props['e']);
        $this->assertSame(['type' => 'array', 'items' => ['enum' => ['EUR', 'USD']]], $props['f']);
        $this->assertEquals(['type' => ['array', 'null'], 'items' => $item], $props['g']);
    }

    public function testEnumsUnionsDatesAndLiterals(): void
    {
        $props = Schema::fromClass(Classes\Kinds::class)->toArray()['properties'];
        $this->assertSame(['enum' => ['Small', 'Large']], $props['size']);
        $this->assertSame(['enum' => [1, 2]], $props['priority']);
        $this->assertSame(['anyOf' => [['type' => 'string'], ['type' => 'integer']]], $props['id']);
        $this->assertSame(['anyOf' => [['type' => 'integer'], ['type' => 'number']]], $props['amount']);
        $this->assertSame(['type' => 'string', 'format' => 'date-time'], $props['at']);
        $this->assertSame(['enum' => [true]], $props['ok']);
    }

    public function testARecursiveClassGoesThroughDefinitions(): void
    {
        $def = 'Displace.Infer.Tests.Classes.Node';
        $this->assertSame([
            '$ref' => "#/\$defs/$def",
            '$defs' => [$def => ['type' => 'object', 'properties' => [
                'value' => ['type' => 'integer'],
                'next' => ['anyOf' => [['$ref' => "#/\$defs/$def"], ['type' => 'null']]],
            ], 'required' => ['value', 'next'], 'additionalProperties' => false]],
        ], Schema::fromClass(Classes\Node::class)->toArray());
        // Nested in an object, the definitions move to the top.
        $outer = Schema::object(['head' => Schema::fromClass(Classes\Node::class)->required()])->toArray();
        $this->assertArrayHasKey($def, $outer['$defs']);
        $this->assertSame(['$ref' => "#/\$defs/$def"], $outer['properties']['head']);
        Grammar::check(Grammar::fromSchema($outer));
    }

    public function testTypesASchemaCannotExpressAreRefusedNamingClassAndProperty(): void
    {
        $c = fn (string $name) => self::NS . $name;
        $cases = [
            'Untyped' => $c('Untyped') . '::$anything: has no type; declare one (string, int, float, bool, an enum, a class, or array with #[ListOf])',
            'Mixed_' => $c('Mixed_') . '::$anything: its type mixed cannot be expressed as a schema; declare a precise type',
            'TwoClasses' => $c('TwoClasses') . '::$either: a union of classes (' . $c('LineItem') . ', ' . $c('Person') . ') has no discriminator to tell which one an answer is; use one class',
            'EnumUnion' => $c('EnumUnion') . '::$x: the union type has ' . $c('Currency') . ' in it',
            'NoItemType' => $c('NoItemType') . '::$things: is an array with no item type; add #[ListOf(Foo::class)] or a @var list<Foo> docblock',
            'UnknownItem' => $c('UnknownItem') . '::$things: cannot find the class Nowhere its items are declared with; write its full name, or #[ListOf(Nowhere::class)]',
            'WrongConstraint' => $c('WrongConstraint') . '::$city: minimum applies to integer and number schemas, not to string ones',
            'Crossed' => $c('Crossed') . '::$code: minLength 5 is greater than maxLength 2',
            'HoldsInterface' => $c('HoldsInterface') . '::$shape: ' . $c('Shape') . ' is an interface; a schema needs a class it can build',
            'Intersection' => $c('Intersection') . '::$both: its type (ReflectionIntersectionType, an intersection) cannot be expressed as a schema',
            'Shape' => $c('Shape') . ' is an interface; a schema needs a class it can build',
            'Base' => $c('Base') . ' is abstract; a schema needs a class it can build',
            'Nope' => 'class ' . $c('Nope') . ' does not exist',
        ];
        foreach ($cases as $class => $message) {
            $this->assertThrows(InferException::class, 'Schema::fromClass(' . $c($class) . '): ' . $message, fn () => Schema::fromClass($c($class)));
        }
    }

    public function testTheAttributesAreRealAttributeClasses(): void
    {
        $description = (new \ReflectionClass(Classes\Invoice::class))->getAttributes(Description::class)[0]->newInstance();
        $this->assertSame('An invoice', $description->text);
        $param = (new \ReflectionClass(Classes\Invoice::class))->getConstructor()->getParameters()[0];
        $this->assertSame(['pattern' => '^INV-[0-9]{3}$'], $param->getAttributes(Constraint::class)[0]->newInstance()->toArray());
        $list = (new \ReflectionProperty(Classes\Lists::class, 'e'))->getAttributes(ListOf::class)[0]->newInstance();
        $this->assertSame('int', $list->type);
        $flags = (new \ReflectionClass(Constraint::class))->getAttributes(\Attribute::class)[0]->getArguments()[0];
        $this->assertSame(\Attribute::TARGET_PROPERTY | \Attribute::TARGET_PARAMETER, $flags);
        $this->assertThrows(\TypeError::class, 'Constraint: minimum must be a finite int or float, got string', fn () => new Constraint(minimum: 'zero'));
    }

    // --- Response::into() ----------------------------------------------------

    public function testIntoBuildsNestedObjectsEnumsDatesAndLists(): void
    {
        $r = self::reply('{"number": "INV-042", "customer": "ACME", "currency": "USD", "date": "2024-03-05", "items": [{"description": "widget", "quantity": 3, "unitPrice": 2.5}, {"description": "gadget", "quantity": 1, "unitPrice": 10}]}');
        $this->assertSame('eos', $r->finishReason());
        $invoice = $r->into(Classes\Invoice::class);
        $this->assertInstanceOf(Classes\Invoice::class, $invoice);
        $this->assertSame('INV-042', $invoice->number);
        $this->assertSame(Classes\Currency::USD, $invoice->currency);
        $this->assertSame('2024-03-05', $invoice->date->format('Y-m-d'));
        $this->assertCount(2, $invoice->items);
        $this->assertSame(['widget', 3, 2.5], [$invoice->items[0]->description, $invoice->items[0]->quantity, $invoice->items[0]->unitPrice]);
        $this->assertSame(10.0, $invoice->items[1]->unitPrice);
        $this->assertNull($invoice->note);
    }

    public function testIntoSkipsAConstructorItCannotSatisfy(): void
    {
        $full = self::reply('{"name": "Ada Lovelace"}')->into(Classes\FullName::class);
        $this->assertSame('Ada Lovelace', $full->name);
        $this->assertFalse($full->built, 'the constructor did not run; the default stayed');
        // Without the constructor, a promoted parameter's default is set.
        $settings = self::reply('{"mode": "fast"}')->into(Classes\Settings::class);
        $this->assertSame(['fast', 3], [$settings->mode, $settings->retries]);
        $person = self::reply('{"name": "Tom", "age": 45}')->into(Classes\Person::class);
        $this->assertSame(['Tom', 45, null, 'kept'], [$person->name, $person->age, $person->city, $person->secret()]);
        $kinds = self::reply('{"size": "Large", "priority": 2, "id": 7, "amount": 7, "at": "2024-01-02T03:04:05Z", "ok": true}')->into(Classes\Kinds::class);
        $this->assertSame([Classes\Size::Large, Classes\Priority::High, 7, 7], [$kinds->size, $kinds->priority, $kinds->id, $kinds->amount]);
        $this->assertInstanceOf(\DateTimeImmutable::class, $kinds->at);
        $node = self::reply('{"value": 1, "next": {"value": 2, "next": null}}')->into(Classes\Node::class);
        $this->assertSame([1, 2, null], [$node->value, $node->next->value, $node->next->next]);
    }

    public function testIntoSaysWhereTheAnswerDoesNotFit(): void
    {
        $into = fn (string $json, string $class) => fn () => self::reply($json)->into(self::NS . $class);
        $p = 'Response::into(' . self::NS;
        $this->assertThrows(InferenceException::class, $p . 'Person): at /age: expected an integer, got a string', $into('{"name": "Tom", "age": "45"}', 'Person'));
        $this->assertThrows(InferenceException::class, $p . 'Person): at /: ' . self::NS . 'Person needs "age", which the answer leaves out', $into('{"name": "Tom"}', 'Person'));
        $this->assertThrows(InferenceException::class, $p . 'Person): at /: ' . self::NS . 'Person has no property "email"', $into('{"name": "Tom", "age": 1, "email": "x"}', 'Person'));
        $this->assertThrows(InferenceException::class, $p . 'Person): at /: expected an object for ' . self::NS . 'Person, got an array', $into('[1]', 'Person'));
        $this->assertThrows(InferenceException::class, $p . 'Kinds): at /size: "Medium" is not one of "Small", "Large"', $into('{"size": "Medium", "priority": 1, "id": 1, "amount": 1, "at": "2024-01-02", "ok": true}', 'Kinds'));
        $this->assertThrows(InferenceException::class, $p . 'Kinds): at /at: "yesterday-ish" is not a date PHP reads', $into('{"size": "Small", "priority": 1, "id": 1, "amount": 1, "at": "yesterday-ish", "ok": true}', 'Kinds'));
        $this->assertThrows(InferenceException::class, $p . 'Invoice): at /items/0/quantity: expected an integer, got a number', $into('{"number": "INV-001", "customer": "A", "currency": "EUR", "date": "2024-01-01", "items": [{"description": "x", "quantity": 1.5, "unitPrice": 1}]}', 'Invoice'));
        $this->assertThrows(InferenceException::class, $p . 'Invoice): the answer does not satisfy the constraints of ' . self::NS . "Invoice's schema", $into('{"number": "INV-1", "customer": "A", "currency": "EUR", "date": "2024-01-01", "items": [{"description": "x", "quantity": 1, "unitPrice": 1}]}', 'Invoice'));
        $this->assertThrows(InferenceException::class, $p . 'Checked): at /: the constructor of ' . self::NS . 'Checked threw: 13 is unlucky', $into('{"n": 13}', 'Checked'));
        $this->assertThrows(InferenceException::class, $p . 'Person): the answer is not complete JSON: ', $into('{"name": "Tom", "age": 4', 'Person'));
        $this->assertThrows(InferenceException::class, 'Response::into(' . self::NS . 'Nope): Schema::fromClass(' . self::NS . 'Nope): class ' . self::NS . 'Nope does not exist', $into('{}', 'Nope'));
    }

    public function testATruncatedRunSaysSo(): void
    {
        $r = self::reply('{"name": "Tom", "age": 45}', maxTokens: 4);
        $this->assertSame('length', $r->finishReason());
        $this->assertThrows(InferenceException::class, "(the run finished 'length', not 'eos': the answer may be cut short)", fn () => $r->into(Classes\Person::class));
    }

    private static function invoiceResponse(): Response
    {
        // The prompt of examples/invoice.php: one worked example as an earlier turn.
        $prompt = Prompt::system('Extract the invoice as JSON, with each line item as written.')
            ->withUser('Invoice INV-207 to Bolt Ltd, 2023-11-20, in dollars: 2 cables at 4.00 each, 5 plugs at 1.20 each.')
            ->withAssistant('{"number": "INV-207", "customer": "Bolt Ltd", "currency": "USD", "date": "2023-11-20", "items": [{"description": "cable", "quantity": 2, "unitPrice": 4.0}, {"description": "plug", "quantity": 5, "unitPrice": 1.2}]}')
            ->withUser('Invoice INV-001 for ACME Corp, dated 2024-03-05, in euros: 3 widgets at 2.50 each, 1 gadget at 10.00.');
        return self::model()->chat($prompt, maxTokens: 400, options: ['schema' => Schema::fromClass(Classes\Invoice::class)]);
    }

    /**
     * The issue's promise: Schema::fromClass + into turns free text into a
     * typed object that satisfies the class's constraints. The constraints
     * are checked here by PHP, not by the extension.
     * @group engine
     */
    public function testFreeTextBecomesAConstraintSatisfyingInvoice(): void
    {
        $r = self::invoiceResponse();
        $this->assertSame('eos', $r->finishReason(), $r->text());
        $invoice = $r->into(Classes\Invoice::class);
        $this->assertMatchesRegularExpression('/^INV-[0-9]{3}$/', $invoice->number);
        $this->assertLessThanOrEqual(40, mb_strlen($invoice->customer));
        $this->assertContains($invoice->currency, Classes\Currency::cases());
        $this->assertSame($r->json()['date'], $invoice->date->format('Y-m-d'));
        $this->assertGreaterThanOrEqual(1, count($invoice->items));
        $this->assertLessThanOrEqual(4, count($invoice->items));
        foreach ($invoice->items as $item) {
            $this->assertInstanceOf(Classes\LineItem::class, $item);
            $this->assertLessThanOrEqual(30, mb_strlen($item->description));
            $this->assertGreaterThanOrEqual(1, $item->quantity);
            $this->assertGreaterThanOrEqual(0, $item->unitPrice);
        }
    }

    /** examples/invoice.php prints the invoice it built. */
    public function testTheInvoiceExampleRuns(): void
    {
        $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension(), (string) realpath(__DIR__ . '/../examples/invoice.php'), self::modelPath()];
        $process = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        $this->assertSame(0, proc_close($process), $out . $err);
        $this->assertMatchesRegularExpression('/^INV-[0-9]{3} for .+, \d{1,2} [A-Z][a-z]{2} \d{4}, (EUR|USD|GBP)\n(  \d+ × .+ at \d+\.\d\d\n){1,4}  total \d+\.\d\d (EUR|USD|GBP)\n$/u', $out);
    }

    /**
     * With the default model the facts are right too: the values are the
     * ones the text states.
     *
     * @group default-model
     */
    public function testTheDefaultModelGetsTheInvoiceFacts(): void
    {
        $invoice = self::invoiceResponse()->into(Classes\Invoice::class);
        $this->assertSame(['INV-001', 'ACME Corp', Classes\Currency::EUR, '2024-03-05'], [$invoice->number, $invoice->customer, $invoice->currency, $invoice->date->format('Y-m-d')]);
        $this->assertSame([['widget', 3, 2.5], ['gadget', 1, 10.0]], array_map(fn ($i) => [$i->description, $i->quantity, $i->unitPrice], $invoice->items));
    }
}
