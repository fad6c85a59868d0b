<?php

// Classes SchemaTest derives schemas from and builds from answers.

declare(strict_types=1);

namespace Displace\Infer\Tests\Classes;

use Displace\Infer\Constraint;
use Displace\Infer\Description;
use Displace\Infer\ListOf;

enum Currency: string
{
    case EUR = 'EUR';
    case USD = 'USD';
}

enum Priority: int
{
    case Low = 1;
    case High = 2;
}

enum Size
{
    case Small;
    case Large;
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
}

/** Plain public properties, no constructor. */
final class Person
{
    public string $name;
    public int $age;
    public ?string $city = null;
    public static int $count = 0;
    private string $secret = 'kept';

    public function secret(): string
    {
        return $this->secret;
    }
}

/** Item types written every way a docblock or attribute can. */
final class Lists
{
    /** @var list<LineItem> */
    public array $a;
    /** @var array<int, LineItem> */
    public array $b;
    /** @var LineItem[] */
    public array $c;
    /** @var list<string> */
    public array $d;
    #[ListOf('int')]
    public array $e;
    #[ListOf(Currency::class)]
    public array $f;
    /** @var ?list<\Displace\Infer\Tests\Classes\LineItem> */
    public ?array $g;
}

final class Kinds
{
    public Size $size;
    public Priority $priority;
    public int|string $id;
    public int|float $amount;
    public \DateTimeInterface $at;
    public true $ok;
}

/** A list that contains itself. */
final class Node
{
    public int $value;
    public ?Node $next;
}

final class Tree
{
    /** @var list<Tree> */
    public array $children;
    public string $label;
}

/** A constructor whose parameters are not all properties: skipped. */
final class FullName
{
    public string $name;
    public bool $built = false;

    public function __construct(string $first, string $last)
    {
        $this->name = "$first $last";
        $this->built = true;
    }
}

/** Promoted parameters with defaults, some required ones the answer lacks. */
final class Settings
{
    public function __construct(
        public readonly string $mode,
        public readonly int $retries = 3,
    ) {
    }
}

final class Checked
{
    public function __construct(public readonly int $n)
    {
        if ($n === 13) {
            throw new \InvalidArgumentException('13 is unlucky');
        }
    }
}

final class Untyped
{
    public $anything;
}

final class Mixed_
{
    public mixed $anything;
}

final class TwoClasses
{
    public LineItem|Person $either;
}

final class EnumUnion
{
    public Currency|int $x;
}

final class NoItemType
{
    public array $things;
}

final class UnknownItem
{
    /** @var list<Nowhere> */
    public array $things;
}

final class WrongConstraint
{
    #[Constraint(minimum: 3)]
    public string $city;
}

final class Crossed
{
    #[Constraint(minLength: 5, maxLength: 2)]
    public string $code;
}

interface Shape
{
}

abstract class Base
{
}

final class HoldsInterface
{
    public Shape $shape;
}

final class Intersection
{
    public \Countable&\Traversable $both;
}
