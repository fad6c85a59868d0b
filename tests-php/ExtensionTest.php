<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferException;
use Displace\Infer\Message;
use Displace\Infer\Model;
use Displace\Infer\Prompt;
use Displace\Infer\Response;
use Displace\Infer\Stream;
use Displace\Infer\Embedding;
use Displace\Infer\RerankModel;

/** The module and the shape of its classes. */
final class ExtensionTest extends InferTestCase
{
    public function testAStreamIsAnIteratorOfPieces(): void
    {
        $r = new \ReflectionClass(Stream::class);
        $this->assertSame(['Iterator', 'Traversable'], $r->getInterfaceNames());
    }

    /**
     * llama.cpp is built without OpenMP: its worker pool does not survive
     * PHP-FPM's fork(), and threads an extension starts through it are a
     * known cause of trouble in threaded servers (FrankenPHP). After a
     * generation, no OpenMP runtime is mapped in this process.
     */
    public function testLlamaCppRunsWithoutOpenMp(): void
    {
        $model = Model::load(self::modelPath(), ['n_threads' => 2]);
        $this->assertNotSame('', $model->chat(Prompt::user('Hi'), maxTokens: 2)->text());
        $maps = (string) file_get_contents('/proc/self/maps');
        $this->assertStringContainsString((string) realpath(DefaultModel::extension()), $maps, 'the extension under test is mapped here');
        foreach (['libgomp', 'libomp', 'libiomp'] as $runtime) {
            $this->assertStringNotContainsString($runtime, $maps, "$runtime is mapped");
        }
    }

    public function testExtensionIsLoadedUnderItsName(): void
    {
        $this->assertTrue(extension_loaded('infer'));
        $this->assertContains('infer', get_loaded_extensions());
    }

    /** @return array<string, array{class-string, string}> */
    public static function factoryClasses(): array
    {
        return [
            'Model' => [Model::class, 'Model::load()'],
            'Prompt' => [Prompt::class, 'Prompt::system() or Prompt::user()'],
            'Message' => [Message::class, 'Prompt::messages()'],
            'Response' => [Response::class, 'Model::chat()'],
            'Stream' => [Stream::class, 'Model::stream() or Model::rawStream()'],
            'Embedding' => [Embedding::class, 'Model::embed() or Model::embedMany()'],
            'RerankModel' => [RerankModel::class, 'RerankModel::load()'],
        ];
    }

    /** @dataProvider factoryClasses */
    public function testClassIsFinalAndInternal(string $class): void
    {
        $r = new \ReflectionClass($class);
        $this->assertTrue($r->isFinal(), "$class is final");
        $this->assertTrue($r->isInternal(), "$class is registered by the extension");
        $this->assertSame('infer', $r->getExtensionName());
    }

    /** @dataProvider factoryClasses */
    public function testNewThrowsNamingTheFactory(string $class, string $factory): void
    {
        $this->assertThrows(InferException::class, "use $factory", fn () => new $class());
    }

    /** @dataProvider factoryClasses */
    public function testInstantiationWithoutConstructorIsRefused(string $class): void
    {
        $this->expectException(\ReflectionException::class);
        $this->expectExceptionMessage('cannot be instantiated without invoking its constructor');
        (new \ReflectionClass($class))->newInstanceWithoutConstructor();
    }

    /** @return array<string, array{callable(): object}> */
    public static function instances(): array
    {
        return [
            'Model' => [fn () => self::model()],
            'Prompt' => [fn () => Prompt::user('hi')],
            'Message' => [fn () => Prompt::user('hi')->messages()[0]],
            'Response' => [fn () => self::model()->chat(Prompt::user('hi'), maxTokens: 1)],
            'Stream' => [fn () => Model::load(self::modelPath())->stream(Prompt::user('hi'), maxTokens: 1)],
            'Embedding' => [fn () => Embedding::fromVector([1.0, 2.0])],
            'RerankModel' => [fn () => RerankModel::load(EmbeddingModel::rankTestPath())],
        ];
    }

    /** @dataProvider instances */
    public function testCloneFailsClearly(callable $make): void
    {
        $object = $make();
        $this->expectException(\Error::class);
        $this->expectExceptionMessage('Trying to clone an uncloneable object of class ' . get_class($object));
        clone $object;
    }

    /** @dataProvider instances */
    public function testSerializeFailsClearly(callable $make): void
    {
        $object = $make();
        $this->expectException(\Exception::class);
        $this->expectExceptionMessage("Serialization of '" . get_class($object) . "' is not allowed");
        serialize($object);
    }

    /** @dataProvider factoryClasses */
    public function testUnserializeFailsClearly(string $class): void
    {
        $payload = sprintf('O:%d:"%s":0:{}', strlen($class), $class);
        $this->expectException(\Exception::class);
        $this->expectExceptionMessage("Unserialization of '$class' is not allowed");
        unserialize($payload);
    }
}
