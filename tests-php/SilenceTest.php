<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

/**
 * Nothing from llama.cpp or ggml reaches stdout or stderr, in normal use or on
 * errors. Runs a child PHP process and captures both streams.
 */
final class SilenceTest extends InferTestCase
{
    private function runPhp(string $code): array
    {
        $extension = DefaultModel::extension();
        $script = $this->tempFile("<?php\n" . $code, '.php');
        $cmd = [PHP_BINARY, '-n', '-d', 'extension=' . $extension, '-d', 'display_errors=stderr', $script];
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, ['INFER_MODEL' => self::modelPath()]);
        $this->assertIsResource($proc);
        $stdout = stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        return [proc_close($proc), $stdout, $stderr];
    }

    public function testNormalUseIsSilent(): void
    {
        [$status, $stdout, $stderr] = $this->runPhp(<<<'PHP'
            $m = Displace\Infer\Model::load(getenv('INFER_MODEL'), ['use_mmap' => false]);
            $m->chat(Displace\Infer\Prompt::user('Hello'), maxTokens: 8, temperature: 0.7);
            $m->raw('Hello', maxTokens: 4);
            $m->countTokens('Hello');
            $m->close();
            echo "done";
            PHP);
        $this->assertSame([0, 'done', ''], [$status, $stdout, $stderr]);
    }

    public function testErrorsAreSilentAndCarryTheReason(): void
    {
        [$status, $stdout, $stderr] = $this->runPhp(<<<'PHP'
            $bytes = file_get_contents(getenv('INFER_MODEL'), length: 4096);
            $path = tempnam(sys_get_temp_dir(), 'infer-silence-');
            file_put_contents($path, $bytes);
            try {
                Displace\Infer\Model::load($path);
            } catch (Displace\Infer\ModelLoadException $e) {
                echo strlen($e->getMessage()) > 40 ? "load-error " : "short ";
            }
            unlink($path);
            $m = Displace\Infer\Model::load(getenv('INFER_MODEL'));
            try {
                $m->raw(str_repeat('word ', 100), nCtx: 8);
            } catch (Displace\Infer\InferenceException $e) {
                echo "inference-error";
            }
            PHP);
        $this->assertSame([0, 'load-error inference-error', ''], [$status, $stdout, $stderr]);
    }

    /**
     * A token item the vocabulary lacks: llama.cpp's grammar parser would
     * print its complaint to stderr, so the extension checks token items
     * against the vocabulary first and says where the item is.
     */
    public function testAGrammarTokenTheModelLacksIsRefusedSilentlyWithItsPlace(): void
    {
        [$status, $stdout, $stderr] = $this->runPhp(<<<'PHP'
            $m = Displace\Infer\Model::load(getenv('INFER_MODEL'));
            try {
                $m->raw('Say x.', maxTokens: 4, options: ['grammar' => "root ::= \"x\" |\n  <no-such-token>"]);
            } catch (Displace\Infer\InferenceException $e) {
                echo get_class($e), ': ', $e->getMessage();
            }
            PHP);
        $this->assertSame(0, $status);
        $this->assertSame('', $stderr);
        $this->assertMatchesRegularExpression(
            "/^Displace\\\\Infer\\\\InferenceException: llama\\.cpp rejected the grammar: line 2, column 3: "
                . "invalid token '<no-such-token>': it is \\d+ tokens of this model's vocabulary, not one$/",
            $stdout,
        );
    }
}
