<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Model;
use Displace\Infer\ModelLoadException;
use Displace\Infer\Prompt;
use Displace\Infer\RerankModel;

use function Displace\Infer\Tests\Support\gguf_parameter_count;

/**
 * GPU offload that is real or refused, and Model::info(). CI builds the CPU
 * variant: there, asking for a GPU must throw, and info() must say the model
 * runs on the CPU. The figures of info() are checked against the GGUF file
 * read in PHP (tests-php/support/gguf.php) and the file system.
 */
final class DevicesTest extends InferTestCase
{
    /** The backends this build of the extension was compiled with (phpinfo). */
    private static function compiledBackends(): array
    {
        ob_start();
        phpinfo(INFO_MODULES);
        $info = (string) ob_get_clean();
        self::assertSame(1, preg_match('/^compiled backends => (.+)$/m', $info, $m), 'phpinfo() lists the compiled backends');
        return explode(', ', $m[1]);
    }

    private static function isCpuBuild(): bool
    {
        return self::compiledBackends() === ['cpu'];
    }

    public function testACpuBuildRefusesGpuLayers(): void
    {
        if (!self::isCpuBuild()) {
            // A GPU build, on a GPU machine (scripts/gpu-check.sh): the layers are really offloaded.
            $info = Model::load(self::modelPath(), ['n_gpu_layers' => 99])->info();
            $this->assertContains($info['backend'], array_slice(self::compiledBackends(), 1), 'layers run on the GPU backend');
            $this->assertSame($info['layers'], $info['gpu_layers'], 'every layer offloaded');
            return;
        }
        $message = 'n_gpu_layers = 99 asks for a GPU, but this build of infer has no GPU backend (compiled backends: cpu); build the extension with one: `make build GPU=cuda` (or vulkan, metal)';
        $this->assertThrows(ModelLoadException::class, $message, fn () => Model::load(self::modelPath(), ['n_gpu_layers' => 99]));
        $this->assertThrows(ModelLoadException::class, 'n_gpu_layers = 1 asks for a GPU', fn () => Model::load(self::modelPath(), ['n_gpu_layers' => 1, 'persistent' => true]));
        $this->assertThrows(ModelLoadException::class, 'main_gpu = 0 asks for a GPU, but this build of infer has no GPU backend', fn () => Model::load(self::modelPath(), ['main_gpu' => 0]));
        $this->assertThrows(ModelLoadException::class, 'n_gpu_layers = 4 asks for a GPU', fn () => RerankModel::load(self::modelPath(), ['n_gpu_layers' => 4]));
    }

    public function testGpuOptionsAreChecked(): void
    {
        $this->assertThrows(ModelLoadException::class, 'option "main_gpu" must be an int >= 0, got int -1', fn () => Model::load(self::modelPath(), ['main_gpu' => -1]));
        $this->assertThrows(ModelLoadException::class, 'option "main_gpu" must be an int >= 0, got string', fn () => Model::load(self::modelPath(), ['main_gpu' => '0']));
    }

    public function testZeroGpuLayersLoadsOnTheCpu(): void
    {
        $model = Model::load(self::modelPath(), ['n_gpu_layers' => 0, 'n_threads' => 1]);
        $info = $model->info();
        $this->assertSame('cpu', $info['backend']);
        $this->assertSame(0, $info['gpu_layers']);
        $this->assertSame(1, $info['threads']);
    }

    public function testInfoDescribesTheModelAsTheFileDoes(): void
    {
        $model = Model::load(self::modelPath(), ['n_threads' => 2]);
        $info = $model->info();
        $gguf = self::gguf();
        $arch = $gguf['general.architecture'];
        $this->assertSame(self::compiledBackends(), $info['backends']);
        $this->assertSame($gguf["$arch.block_count"] + 1, $info['layers'], 'the repeating layers and the output layer');
        $this->assertSame($gguf["$arch.context_length"], $info['context_length']);
        $this->assertSame(filesize(self::modelPath()), $info['file_size']);
        $this->assertSame(gguf_parameter_count(self::modelPath()), $info['parameters']);
        $this->assertSame(2, $info['threads']);
        $this->assertNull($info['context_size'], 'no context before the first call');
        $model->chat(Prompt::user('Hi'), maxTokens: 2, nCtx: 1024);
        $this->assertSame(1024, $model->info()['context_size']);
        $cpu = array_values(array_filter($info['devices'], fn (array $d) => $d['type'] === 'cpu'));
        $this->assertCount(1, $cpu);
        $this->assertSame('cpu', $cpu[0]['backend']);
        $this->assertGreaterThan(0, $cpu[0]['memory_total']);
        if (self::isCpuBuild()) {
            $this->assertSame(['CPU'], array_column($info['devices'], 'name'));
            $this->assertSame(['cpu', 0], [$info['backend'], $info['gpu_layers']]);
        }
    }

    /** @group default-model */
    public function testInfoNamesTheQuantisation(): void
    {
        $this->assertSame(3, self::gguf()['general.file_type'], 'llama_ftype 3 is MOSTLY_Q4_1');
        $this->assertSame('Q4_1', self::model()->info()['quantization']);
    }
}
