<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\InferException;
use Displace\Infer\ModelLoadException;

/** The exception family is made of ordinary, extendable exceptions. */
final class ExceptionsTest extends InferTestCase
{
    public function testHierarchyIsRootedAtRuntimeException(): void
    {
        $this->assertSame(\RuntimeException::class, get_parent_class(InferException::class));
        $this->assertSame(InferException::class, get_parent_class(ModelLoadException::class));
        $this->assertSame(InferException::class, get_parent_class(InferenceException::class));
    }

    public function testExceptionsAreNotFinal(): void
    {
        foreach ([InferException::class, ModelLoadException::class, InferenceException::class] as $class) {
            $this->assertFalse((new \ReflectionClass($class))->isFinal(), $class);
        }
    }

    public function testPhpCodeCanConstructThemWithMessageCodeAndPrevious(): void
    {
        $previous = new \LogicException('cause');
        $e = new InferenceException('boom', 42, $previous);
        $this->assertSame('boom', $e->getMessage());
        $this->assertSame(42, $e->getCode());
        $this->assertSame($previous, $e->getPrevious());
        $this->assertSame(__LINE__ - 4, $e->getLine());
    }

    /**
     * A subclass written in PHP keeps the constructor's arguments and is
     * caught by each ancestor's catch clause: the catch itself is the check
     * (an exception that did not match would fail the test).
     */
    public function testPhpCodeCanExtendAndCatchThem(): void
    {
        $sub = new class ('custom', 7) extends ModelLoadException {
        };
        $this->assertSame(['custom', 7], [$sub->getMessage(), $sub->getCode()]);
        try {
            throw $sub;
        } catch (ModelLoadException $caught) {
            $this->assertSame($sub, $caught);
        }
        try {
            throw $sub;
        } catch (InferException $caught) {
            $this->assertSame($sub, $caught);
        }
        try {
            throw $sub;
        } catch (\RuntimeException $caught) {
            $this->assertSame($sub, $caught);
        }
    }

    public function testExtensionErrorsAreCatchableAsTheBaseClass(): void
    {
        try {
            \Displace\Infer\Model::load('/nonexistent/model.gguf');
            $this->fail('no exception');
        } catch (InferException $e) {
            // Caught as the base class, thrown as the precise one.
            $this->assertSame(ModelLoadException::class, get_class($e));
        }
    }
}
