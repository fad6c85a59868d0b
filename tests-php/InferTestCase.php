<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Model;
use PHPUnit\Framework\TestCase;

use function Displace\Infer\Tests\Support\gguf_metadata;

/**
 * Shared helpers: one model per process, the model's GGUF metadata read
 * independently of the extension, temporary files, and an assertion that
 * checks both the exception class and its message.
 *
 * A test in the group `default-model` expects values that hold for the
 * default model only (DefaultModel): setUp() fails it when INFER_MODEL is
 * another file.
 */
abstract class InferTestCase extends TestCase
{
    public const DEFAULT_MODEL_GROUP = 'default-model';

    private static ?Model $model = null;

    /** @var array<string, mixed>|null */
    private static ?array $gguf = null;

    private static ?string $modelSha256 = null;

    /** @var list<string> */
    private array $tempFiles = [];

    /**
     * The thread budget's registry of the user with $uid: one flock()ed
     * slot file per core a generation holds (/dev/shm/infer-UID).
     */
    protected static function slotRegistry(int $uid): string
    {
        $base = is_dir('/dev/shm') ? '/dev/shm' : sys_get_temp_dir();
        return "$base/infer-$uid";
    }

    /** How many slots of $registry another process holds right now. */
    protected static function heldSlots(string $registry): int
    {
        $held = 0;
        foreach (glob($registry . '/slot-*') ?: [] as $slot) {
            $h = fopen($slot, 'r');
            if ($h === false) {
                continue;
            }
            if (!flock($h, LOCK_SH | LOCK_NB)) {
                $held++;
            } else {
                flock($h, LOCK_UN);
            }
            fclose($h);
        }
        return $held;
    }

    protected static function modelPath(): string
    {
        $path = DefaultModel::path();
        if (!is_file($path)) {
            self::fail("model not found at $path: run `make model` or set INFER_MODEL");
        }
        return $path;
    }

    protected static function embeddingModelPath(): string
    {
        $path = EmbeddingModel::path();
        if (!is_file($path)) {
            self::fail("embedding model not found at $path: run `make embedding-model`");
        }
        return $path;
    }

    /**
     * The default model, loaded once for the whole run. INFER_TEST_GPU_LAYERS
     * (scripts/gpu-check.sh, on a GPU build) offloads its layers.
     */
    protected static function model(): Model
    {
        $layers = getenv('INFER_TEST_GPU_LAYERS');
        return self::$model ??= Model::load(self::modelPath(), $layers === false ? [] : ['n_gpu_layers' => (int) $layers]);
    }

    /**
     * The metadata of the model file, read by tests-php/support/gguf.php
     * (not by llama.cpp), to check what the extension reports against.
     *
     * @return array<string, mixed>
     */
    protected static function gguf(): array
    {
        return self::$gguf ??= gguf_metadata(self::modelPath());
    }

    protected function setUp(): void
    {
        parent::setUp();
        if (in_array(self::DEFAULT_MODEL_GROUP, $this->getGroups(), true)) {
            self::requireDefaultModel();
        }
    }

    /**
     * Fail (not skip) when INFER_MODEL is not the default model: the test's
     * expected values (DefaultModel) would not hold, and a skip would hide it.
     */
    protected static function requireDefaultModel(): void
    {
        $path = self::modelPath();
        self::$modelSha256 ??= hash_file('sha256', $path);
        if (self::$modelSha256 !== DefaultModel::SHA256) {
            self::fail(sprintf(
                "this test expects values of the default model %s (sha256 %s, see tests-php/support/DefaultModel.php),\n"
                . "but INFER_MODEL is %s (sha256 %s).\n"
                . "To test another model, leave these tests out: phpunit --exclude-group %s",
                DefaultModel::FILE,
                DefaultModel::SHA256,
                $path,
                self::$modelSha256,
                self::DEFAULT_MODEL_GROUP,
            ));
        }
    }

    /** Fail (not skip) when a PHP extension the test needs is missing. */
    protected static function requireExtension(string $name): void
    {
        if (!extension_loaded($name)) {
            self::fail("this test needs PHP's $name extension, which is not loaded (scripts/install-deps.sh installs it)");
        }
    }

    /**
     * A copy of the model whose stored template is $template, padded with a Jinja comment. When it fits in the
     * stored one the GGUF string keeps its length; otherwise it grows by a multiple of the file's 32-byte alignment,
     * which moves the tensor data by that much and keeps every tensor offset (relative to the aligned data start)
     * valid.
     */
    protected function modelWithTemplate(string $template): Model
    {
        return Model::load($this->tempFile(self::ggufWithTemplate($template)));
    }

    /** The default model's GGUF bytes with $template as its chat template. */
    protected static function ggufWithTemplate(string $template): string
    {
        $bytes = file_get_contents(self::modelPath());
        $key = 'tokenizer.chat_template';
        $at = strpos($bytes, $key);
        self::assertNotFalse($at);
        $lengthAt = $at + strlen($key) + 4; // after the key: u32 type (8 = string), then u64 length
        self::assertSame(8, unpack('V', substr($bytes, $at + strlen($key), 4))[1]);
        $length = unpack('P', substr($bytes, $lengthAt, 8))[1];
        $newLength = $length;
        $needed = strlen($template) + 4;
        if ($needed > $length) {
            // The tensor data after the metadata stays aligned to 32 bytes.
            $newLength = $length + (int) ceil(($needed - $length) / 32) * 32;
        }
        $replacement = $template . '{#' . str_repeat(' ', $newLength - $needed) . '#}';
        return substr_replace($bytes, pack('P', $newLength) . $replacement, $lengthAt, 8 + $length);
    }

    /**
     * A model of another template family, fetched only for the tests that need it (make qwen-model, make
     * gemma-model): $env names it, else the file under models/. Fails (never skips) when it is missing.
     */
    protected static function familyModel(string $env, string $file, string $target): Model
    {
        static $loaded = [];
        $path = getenv($env) ?: dirname(__DIR__) . '/models/' . $file;
        if (!is_file($path)) {
            self::fail("model not found at $path: run `make $target` or set $env");
        }
        return $loaded[$path] ??= Model::load($path);
    }

    /** Qwen2.5-Coder-0.5B-Instruct: a Hermes/Qwen tool-aware Jinja template. */
    protected static function qwenModel(): Model
    {
        return self::familyModel('INFER_QWEN_MODEL', 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf', 'qwen-model');
    }

    /** Gemma 3 270M: SentencePiece vocabulary with <start_of_turn> control tokens, no stored template. */
    protected static function gemmaModel(): Model
    {
        return self::familyModel('INFER_GEMMA_MODEL', 'gemma-3-270m-q4_k_m.gguf', 'gemma-model');
    }

    /**
     * The prompt tokens of $rendered when $content (found in it once) is read as plain text and the rest with
     * special tokens: counted by llama.cpp's tokenizer piece by piece.
     */
    protected static function tokensWithContentAsText(Model $model, string $rendered, string $content): int
    {
        $at = strpos($rendered, $content);
        self::assertNotFalse($at, 'the message is in the rendering');
        self::assertFalse(strpos($rendered, $content, $at + 1), 'the message is in the rendering once');
        return $model->countTokens(substr($rendered, 0, $at))
            + $model->countTokens($content, parseSpecial: false)
            + $model->countTokens(substr($rendered, $at + strlen($content)));
    }

    /** A copy of the model whose chat template key is renamed, so that llama.cpp finds no template. */
    protected function modelWithoutChatTemplate(): Model
    {
        $bytes = file_get_contents(self::modelPath());
        $at = strpos($bytes, 'tokenizer.chat_template');
        $this->assertNotFalse($at);
        $bytes[$at] = 'X';
        return Model::load($this->tempFile($bytes));
    }

    /**
     * What `-r $code` prints on stdout in a PHP process of its own with the extension and `-d` $ini (no php.ini),
     * $args after it; the process must exit 0.
     *
     * @param array<string, string> $ini
     * @param list<string> $args
     */
    protected function phpOutput(array $ini, string $code, array $args = []): string
    {
        $cmd = [PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension()];
        foreach ($ini as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        array_push($cmd, '-r', $code, ...$args);
        return $this->commandOutput($cmd);
    }

    /**
     * What $cmd prints on stdout (stdin empty); it must exit 0.
     *
     * @param list<string> $cmd
     */
    protected function commandOutput(array $cmd): string
    {
        $proc = proc_open($cmd, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $this->assertIsResource($proc);
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $this->assertSame(0, proc_close($proc), basename($cmd[0]) . " failed; stderr:\n$err");
        return (string) $out;
    }

    protected function tempFile(string $bytes, string $suffix = '.gguf'): string
    {
        $base = tempnam(sys_get_temp_dir(), 'infer-test-');
        $path = $base . $suffix;
        file_put_contents($path, $bytes);
        array_push($this->tempFiles, $path, $base);
        return $path;
    }

    protected function tearDown(): void
    {
        foreach ($this->tempFiles as $path) {
            @unlink($path);
        }
        $this->tempFiles = [];
    }

    /**
     * Run $fn and check that it throws exactly $class with a message containing $fragment.
     */
    /**
     * Wait for a process started with stdout and stderr as pipes 1 and 2:
     * nothing may reach its stderr and it must exit 0. Returns its stdout's
     * lines, each decoded as JSON.
     *
     * @param resource $proc
     * @param array<int, resource> $pipes
     */
    protected static function jsonLinesOf($proc, array $pipes): array
    {
        $stdout = stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);
        $status = proc_close($proc);
        self::assertSame('', $stderr, 'nothing on stderr');
        self::assertSame(0, $status, $stdout);
        return array_map(fn ($l) => json_decode($l, true, flags: JSON_THROW_ON_ERROR), explode("\n", trim($stdout)));
    }

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
