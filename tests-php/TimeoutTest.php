<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;

use function Displace\Infer\Tests\Support\free_port;

require_once __DIR__ . '/support/LlamaServer.php';

/**
 * Option `timeout` (seconds): the generation stops at the deadline with
 * finish reason 'timeout' and keeps what it generated; a prompt still being
 * evaluated stops too (llama.cpp's abort callback). Either way the model's
 * cache is left holding exactly what it says, so later calls give what a
 * fresh model gives.
 */
final class TimeoutTest extends InferTestCase
{
    private static function longPrompt(): Prompt
    {
        return Prompt::user(str_repeat('The library opens at nine and closes at five. Books can be renewed online. ', 60));
    }

    public function testTheDeadlineStopsGenerationAndKeepsThePartialOutput(): void
    {
        $model = Model::load(self::modelPath());
        $prompt = Prompt::user('Write a very long story about a dragon who learns to read.');
        $cut = $model->chat($prompt, maxTokens: 4000, nCtx: 4096, options: ['timeout' => 0.5]);
        $this->assertSame('timeout', $cut->finishReason());
        $this->assertLessThan(4000, $cut->tokensGenerated());
        // The partial output is what greedy decoding of as many tokens without
        // a deadline gives, on another model.
        if ($cut->tokensGenerated() === 0) {
            $this->assertSame('', $cut->text());
            return;
        }
        $reference = Model::load(self::modelPath())->chat($prompt, maxTokens: $cut->tokensGenerated(), nCtx: 4096, options: ['cache_prompt' => false]);
        $this->assertSame($reference->text(), $cut->text());
    }

    /** @group slow */
    public function testTheDeadlineStopsAPromptInTheMiddleOfItsEvaluation(): void
    {
        $model = Model::load(self::modelPath());
        $cut = $model->chat(self::longPrompt(), maxTokens: 16, nCtx: 2048, options: ['timeout' => 0.01]);
        $this->assertSame('timeout', $cut->finishReason());
        $this->assertSame(0, $cut->tokensGenerated());
        $this->assertSame('', $cut->text());
        $this->assertGreaterThan(512, $cut->promptTokens(), 'more than one batch of 512: the evaluation has a middle');

        // What was evaluated before the stop is not trusted by the next call
        // unless the cache really holds it: the output is a fresh model's.
        $after = $model->chat(self::longPrompt(), maxTokens: 16, nCtx: 2048);
        $fresh = Model::load(self::modelPath())->chat(self::longPrompt(), maxTokens: 16, nCtx: 2048);
        $this->assertSame($fresh->text(), $after->text());
        $this->assertSame($fresh->finishReason(), $after->finishReason());
        // A prompt evaluated to the end would be reused whole.
        $this->assertLessThan($after->promptTokens() - 1, $after->cachedTokens(), 'the evaluation stopped part-way');
    }

    /** @group engine */
    public function testChatManyStopsEveryPromptAtTheDeadline(): void
    {
        $model = Model::load(self::modelPath());
        $prompts = [self::longPrompt(), Prompt::user('Write a long poem.'), Prompt::user('Tell a long story.')];
        $many = $model->chatMany($prompts, maxTokens: 4000, nCtx: 4096, options: ['timeout' => 0.05]);
        $this->assertSame(['timeout', 'timeout', 'timeout'], array_map(fn ($r) => $r->finishReason(), $many));
        // The model is consistent afterwards.
        $this->assertSame(
            Model::load(self::modelPath())->chat($prompts[1], maxTokens: 8)->text(),
            $model->chatMany([$prompts[1]], maxTokens: 8)[0]->text(),
        );
    }

    /** @return array<string, array{mixed, string}> */
    public static function badTimeouts(): array
    {
        return [
            'zero' => [0, 'got int 0'],
            'negative' => [-1.5, 'got float -1.5'],
            'infinite' => [INF, 'got float INF'],
            'NaN' => [NAN, 'got float NAN'],
            'string' => ['1', 'got string'],
        ];
    }

    /** @dataProvider badTimeouts */
    public function testABadTimeoutThrowsNamingTheKey(mixed $value, string $got): void
    {
        foreach (['chat', 'chatMany', 'stream', 'rawStream'] as $method) {
            $e = $this->assertThrows(InferenceException::class, 'option "timeout" must be a finite number of seconds > 0, ', function () use ($method, $value) {
                $prompt = Prompt::user('Hi');
                match ($method) {
                    'chat' => self::model()->chat($prompt, options: ['timeout' => $value]),
                    'chatMany' => self::model()->chatMany([$prompt], options: ['timeout' => $value]),
                    'stream' => self::model()->stream($prompt, options: ['timeout' => $value]),
                    'rawStream' => self::model()->rawStream('Hi', options: ['timeout' => $value]),
                };
            });
            $this->assertStringContainsString($got, $e->getMessage());
        }
    }

    /**
     * PHP's own time limit (max_execution_time) where PHP counts it in wall
     * time — a thread-safe PHP on Linux, whose per-thread timer never kills a
     * request — bounds a read blocked on a server: a server that sends one
     * token and then only keep-alive comments holds the call until PHP's
     * limit (1 s), not until the connection's timeout (4 s). Where PHP counts
     * CPU time, which a blocked read does not use, the connection's timeout
     * ends it.
     */
    public function testPhpsTimeLimitBoundsAReadBlockedOnAServerWhereItIsWallTime(): void
    {
        $port = free_port();
        $server = proc_open(
            [PHP_BINARY, '-n', __DIR__ . '/support/fake-server.php', (string) $port, 'keepalive'],
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']],
            $pipes,
        );
        try {
            $deadline = microtime(true) + 10;
            while (microtime(true) < $deadline && ($socket = @stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 0.2)) === false) {
                usleep(20000);
            }
            if (is_resource($socket)) {
                fclose($socket);
            }
            $code = <<<'PHP'
                $start = microtime(true);
                register_shutdown_function(function () use ($start) {
                    echo json_encode(['took' => microtime(true) - $start, 'timed_out' => error_get_last()['message'] ?? '']);
                });
                try {
                    $m = Displace\Infer\Model::connect($argv[1], ['timeout' => 4]);
                    $m->chat(Displace\Infer\Prompt::user('Hi'), maxTokens: 64);
                } catch (Throwable $e) {
                    echo get_class($e), ': ', $e->getMessage(), "\n";
                }
                PHP;
            $proc = proc_open(
                [PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension(), '-d', 'max_execution_time=1', '-d', 'display_errors=0', '-r', $code, "http://127.0.0.1:$port"],
                [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
                $child,
            );
            $out = (string) stream_get_contents($child[1]);
            $err = (string) stream_get_contents($child[2]);
            proc_close($proc);
        } finally {
            proc_terminate($server, 9);
            proc_close($server);
        }
        $this->assertStringContainsString('took', $out, "the child said: $out; on stderr: $err");
        $lines = explode("\n", trim($out));
        $end = json_decode((string) end($lines), true, flags: JSON_THROW_ON_ERROR);
        if (PHP_ZTS) {
            $this->assertLessThan(2.0, $end['took'], $out);
            $this->assertStringStartsWith('Maximum execution time of 1 second exceeded', $end['timed_out'], $out);
        } else {
            $this->assertGreaterThan(3.5, $end['took'], $out);
            $this->assertStringContainsString('did not answer within 4 s (option "timeout")', $out);
        }
    }

    public function testAFarDeadlineChangesNothing(): void
    {
        $prompt = Prompt::user('Name a fruit.');
        $this->assertSame(
            self::model()->chat($prompt, maxTokens: 8, options: ['cache_prompt' => false])->text(),
            self::model()->chat($prompt, maxTokens: 8, options: ['timeout' => 1e300, 'cache_prompt' => false])->text(),
        );
    }
}
