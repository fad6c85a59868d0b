<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Model;
use Displace\Infer\ModelLoadException;
use Displace\Infer\Prompt;

final class ModelLoadTest extends InferTestCase
{
    /**
     * The loaded model reads the file's metadata and generates: its context
     * length is the one the GGUF stores (read without llama.cpp), and a
     * second load gives the same greedy text as the first.
     */
    public function testLoadReturnsAUsableModel(): void
    {
        $gguf = self::gguf();
        $model = Model::load(self::modelPath());
        $this->assertSame($gguf[$gguf['general.architecture'] . '.context_length'], $model->contextLength());
        $text = $model->raw('The capital of France is', maxTokens: 4);
        $this->assertNotSame('', $text);
        $this->assertSame(self::model()->raw('The capital of France is', maxTokens: 4), $text);
        $model->close();
    }

    /** @return array<string, array{array<string, mixed>}> */
    public static function validOptions(): array
    {
        return [
            'n_gpu_layers 0' => [['n_gpu_layers' => 0]],
            'use_mmap false' => [['use_mmap' => false]],
            'use_mmap true' => [['use_mmap' => true]],
            'use_mlock true' => [['use_mlock' => true]],
            'n_threads 1' => [['n_threads' => 1]],
            'all together' => [['n_gpu_layers' => 0, 'use_mmap' => true, 'use_mlock' => false, 'n_threads' => 2]],
        ];
    }

    /**
     * Every valid option loads a model that gives the same greedy answer.
     *
     * @dataProvider validOptions
     */
    public function testValidOptionsLoadAnEquivalentModel(array $options): void
    {
        $prompt = Prompt::user('What is the capital of France?');
        $expected = self::model()->chat($prompt, maxTokens: 8)->text();
        $model = Model::load(self::modelPath(), $options);
        $this->assertSame($expected, $model->chat($prompt, maxTokens: 8)->text());
        $model->close();
    }

    /** @return array<string, array{mixed, string}> */
    public static function invalidOptions(): array
    {
        return [
            'n_gpu_layers negative' => [['n_gpu_layers' => -1], 'option "n_gpu_layers" must be an int >= 0, got int -1'],
            'n_gpu_layers string' => [['n_gpu_layers' => '3'], 'option "n_gpu_layers" must be an int >= 0, got string'],
            'n_gpu_layers float' => [['n_gpu_layers' => 1.5], 'option "n_gpu_layers" must be an int >= 0, got float 1.5'],
            'use_mmap int' => [['use_mmap' => 1], 'option "use_mmap" must be a bool, got int 1'],
            'use_mmap null' => [['use_mmap' => null], 'option "use_mmap" must be a bool, got null'],
            'use_mlock string' => [['use_mlock' => 'yes'], 'option "use_mlock" must be a bool, got string'],
            'n_threads zero' => [['n_threads' => 0], 'option "n_threads" must be an int between 1 and 512, got int 0'],
            'n_threads array' => [['n_threads' => [2]], 'option "n_threads" must be an int between 1 and 512, got array'],
            'n_threads PHP_INT_MAX' => [['n_threads' => PHP_INT_MAX], 'option "n_threads" must be an int between 1 and 512, got int ' . PHP_INT_MAX],
            'n_threads past ggml limit' => [['n_threads' => 513], 'option "n_threads" must be an int between 1 and 512, got int 513'],
            'n_threads above u32' => [['n_threads' => 1 << 32], 'option "n_threads" must be an int between 1 and 512, got int 4294967296'],
            'unknown key' => [['n_thread' => 2], 'option "n_thread" is not a known option (known: n_gpu_layers, main_gpu, use_mmap, use_mlock, n_threads, persistent, embedding, pooling, shared, mmproj, lora, lora_contexts)'],
            'generation key' => [['temperature' => 0.5], 'option "temperature" is not a known option'],
            'integer key' => [[4], 'option "0" is an integer key; options are an array keyed by name'],
        ];
    }

    /** @dataProvider invalidOptions */
    public function testInvalidOptionsThrowNamingTheKey(array $options, string $message): void
    {
        $this->assertThrows(ModelLoadException::class, $message, fn () => Model::load(self::modelPath(), $options));
    }

    public function testMissingFile(): void
    {
        $this->assertThrows(
            ModelLoadException::class,
            'model file not found: /nonexistent/dir/model.gguf',
            fn () => Model::load('/nonexistent/dir/model.gguf'),
        );
    }

    public function testDirectory(): void
    {
        $dir = sys_get_temp_dir();
        $this->assertThrows(
            ModelLoadException::class,
            "model path is a directory, not a GGUF file: $dir",
            fn () => Model::load($dir),
        );
    }

    public function testEmptyFile(): void
    {
        $path = $this->tempFile('');
        $this->assertThrows(ModelLoadException::class, "model file is empty: $path", fn () => Model::load($path));
    }

    public function testEmptyPath(): void
    {
        $this->assertThrows(ModelLoadException::class, 'model file not found', fn () => Model::load(''));
    }

    public function testFileThatIsNotGguf(): void
    {
        $path = $this->tempFile("<?php echo 'hello';\n");
        $this->assertThrows(
            ModelLoadException::class,
            'not a GGUF file (the first 4 bytes are "<?ph", expected "GGUF")',
            fn () => Model::load($path),
        );
    }

    public function testCharacterDeviceIsNotARegularFile(): void
    {
        $this->assertThrows(ModelLoadException::class, 'model path is not a regular file: /dev/zero', fn () => Model::load('/dev/zero'));
    }

    /** @return array<string, array{int}> */
    public static function truncations(): array
    {
        return [
            'magic only' => [4],
            'inside the header' => [24],
            'inside the metadata' => [4096],
            'inside the tensor data' => [8 * 1024 * 1024],
        ];
    }

    /** @dataProvider truncations */
    public function testTruncatedGgufIsRejectedByLlamaCpp(int $bytes): void
    {
        $fh = fopen(self::modelPath(), 'rb');
        $head = fread($fh, $bytes);
        fclose($fh);
        $path = $this->tempFile($head);
        $e = $this->assertThrows(ModelLoadException::class, "llama.cpp could not load $path: ", fn () => Model::load($path));
        $this->assertGreaterThan(strlen("llama.cpp could not load $path: "), strlen($e->getMessage()), 'the reason is given');
    }
}
