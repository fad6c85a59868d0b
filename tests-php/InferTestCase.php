<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Model;
use PHPUnit\Framework\TestCase;

/**
 * Shared helpers: one model per process, temporary files, and an assertion
 * that checks both the exception class and its message.
 */
abstract class InferTestCase extends TestCase
{
    private static ?Model $model = null;

    /** @var list<string> */
    private array $tempFiles = [];

    protected static function modelPath(): string
    {
        $path = getenv('INFER_MODEL') ?: dirname(__DIR__) . '/models/SmolLM2-135M-Instruct.Q4_1.gguf';
        if (!is_file($path)) {
            self::fail("model not found at $path: run `make model` or set INFER_MODEL");
        }
        return $path;
    }

    /** The default model, loaded once for the whole run. */
    protected static function model(): Model
    {
        return self::$model ??= Model::load(self::modelPath());
    }

    protected function tempFile(string $bytes, string $suffix = '.gguf'): string
    {
        $path = tempnam(sys_get_temp_dir(), 'infer-test-') . $suffix;
        file_put_contents($path, $bytes);
        $this->tempFiles[] = $path;
        return $path;
    }

    protected function tearDown(): void
    {
        foreach ($this->tempFiles as $path) {
            @unlink($path);
            @unlink(substr($path, 0, -strlen('.gguf')));
        }
        $this->tempFiles = [];
    }

    /**
     * Run $fn and check that it throws exactly $class with a message containing $fragment.
     */
    protected function assertThrows(string $class, string $fragment, callable $fn): \Throwable
    {
        try {
            $fn();
        } catch (\Throwable $e) {
            $this->assertSame($class, get_class($e), 'exception class; message: ' . $e->getMessage());
            $this->assertStringContainsString($fragment, $e->getMessage());
            return $e;
        }
        $this->fail("expected $class containing \"$fragment\", nothing was thrown");
    }
}
