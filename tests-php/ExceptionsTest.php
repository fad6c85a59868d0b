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

    /**
     * The published API's test of `new Model()` reads the message with the phpt pattern `%sModel::load()%s`: text
     * on both sides of the factory's name. Every class without a public constructor words it the same way.
     */
    public function testNewOnAClassWithoutConstructorNamesTheFactoryInsideASentence(): void
    {
        $factories = [
            'Model' => 'Model::load()',
            'RerankModel' => 'RerankModel::load()',
            'Response' => 'Model::chat()',
            'Message' => 'Prompt::messages()',
            'ToolCall' => 'Response::toolCalls()',
        ];
        foreach ($factories as $class => $factory) {
            $fqcn = 'Displace\\Infer\\' . $class;
            $e = $this->assertThrows(InferException::class, $factory, fn () => new $fqcn());
            $this->assertSame("{$fqcn} cannot be created with new; use {$factory} instead.", $e->getMessage());
        }
        foreach (['Prompt', 'Grammar', 'Stream', 'Embedding', 'Schema'] as $class) {
            $fqcn = 'Displace\\Infer\\' . $class;
            $e = $this->assertThrows(InferException::class, 'cannot be created with new; use ', fn () => new $fqcn());
            $this->assertMatchesRegularExpression('/ instead\.$/', $e->getMessage());
        }
        // The phpt's `%s` is one or more characters other than a newline.
        $e = $this->assertThrows(InferException::class, 'Model::load()', fn () => new \Displace\Infer\Model());
        $this->assertMatchesRegularExpression('/^[^\n]+Model::load\(\)[^\n]+$/', $e->getMessage());
    }
}
