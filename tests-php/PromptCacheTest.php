<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Model;
use Displace\Infer\Prompt;

/**
 * A model keeps its context between calls and reuses the shared prompt
 * prefix (`cache_prompt`, on by default). Reuse never changes the output, and
 * a forked child process gets a working model of its own.
 *
 * What it checks is the engine's, the same on every PHP: CI's quick runs on the other PHPs leave it out.
 *
 * @group engine
 */
final class PromptCacheTest extends InferTestCase
{
    private const SYSTEM = 'You are the help desk of a small library. Answer in one short sentence.';

    private static function ask(Model $model, string $question, array $options = [], int $nCtx = 2048, int $maxTokens = 16): string
    {
        return $model->chat(Prompt::system(self::SYSTEM)->withUser($question), maxTokens: $maxTokens, nCtx: $nCtx, options: $options)->text();
    }

    public function testReuseGivesTheSameOutputAsAFreshModel(): void
    {
        $fresh = Model::load(self::modelPath());
        $reference = self::ask($fresh, 'When do you open?', ['cache_prompt' => false]);
        $fresh->close();

        $model = Model::load(self::modelPath());
        self::ask($model, 'Can I renew a book online?');
        self::ask($model, 'Do you have a printer?', ['grammar' => 'root ::= "yes" | "no"']);
        self::ask($model, 'Where is the children section?', nCtx: 512);
        $this->assertSame($reference, self::ask($model, 'When do you open?'));
        $this->assertSame($reference, self::ask($model, 'When do you open?'), 'the same call again');
        $this->assertSame($reference, self::ask($model, 'When do you open?', ['cache_prompt' => false]));
    }

    /**
     * A prompt found whole in the process's cache, restored into another
     * context (a call of another nCtx here; another thread's context under a
     * threaded server), gives the reply of a fresh evaluation. Restoring the
     * state and evaluating the prompt's last token again alone gave other
     * replies for two of these prompts: llama.cpp's kernels round one row
     * differently from a batch, and greedy decoding follows the difference.
     * The logits of the evaluation that made the state are kept with it.
     */
    public function testAPromptFoundWholeInTheCacheGivesTheFreshReply(): void
    {
        $prompts = [
            'List the colours of the rainbow and say one thing about each colour, in a numbered list. Keep each line short and simple, and start with red, which is the first colour of the rainbow.',
            'Write a short numbered list of five colours and describe each one in a sentence. Think of colours that people see every day, such as the colour of the sky, of grass and of the sun.',
        ];
        $fresh = Model::load(self::modelPath(), ['n_threads' => 1]);
        $model = Model::load(self::modelPath(), ['n_threads' => 1]);
        foreach ($prompts as $i => $text) {
            $reference = $fresh->chat(Prompt::user($text), maxTokens: 48, nCtx: 512, options: ['cache_prompt' => false])->text();
            $first = $model->chat(Prompt::user($text), maxTokens: 48, nCtx: 512);
            $this->assertLessThan($first->promptTokens() - 16, $first->cachedTokens(), "prompt $i is new to the cache");
            $this->assertSame($reference, $first->text(), "prompt $i, fresh");
            // Another size of context: another context, which the state of
            // the first is restored into.
            $again = $model->chat(Prompt::user($text), maxTokens: 48, nCtx: 1024);
            $this->assertSame($reference, $again->text(), "prompt $i, restored");
            $this->assertSame($again->promptTokens(), $again->cachedTokens(), "prompt $i found whole in the cache");
        }
    }

    public function testSchemaOutputIsTheSameWithAndWithoutReuse(): void
    {
        $schema = ['type' => 'object', 'properties' => ['open' => ['type' => 'boolean'], 'hour' => ['type' => 'integer', 'minimum' => 0, 'maximum' => 23]]];
        $model = self::model();
        $with = self::ask($model, 'Are you open at nine?', ['schema' => $schema], maxTokens: 64);
        self::ask($model, 'Something else entirely.');
        $without = self::ask($model, 'Are you open at nine?', ['schema' => $schema, 'cache_prompt' => false], maxTokens: 64);
        $this->assertSame($without, $with);
        $this->assertIsArray(json_decode($with, true, flags: JSON_THROW_ON_ERROR));
    }

    /**
     * llama.cpp's worker threads do not survive fork(): the child must not
     * reuse (or free) the parent's context, and must get the same answers.
     */
    public function testAForkedChildGeneratesWithoutHanging(): void
    {
        self::requireExtension('pcntl');
        self::requireExtension('posix');
        $model = Model::load(self::modelPath());
        $expected = self::ask($model, 'When do you open?');
        $pipe = tempnam(sys_get_temp_dir(), 'infer-fork-');
        $pid = pcntl_fork();
        if ($pid === 0) {
            // The child: a call on the inherited model, then exit without PHP's shutdown.
            file_put_contents($pipe, self::ask($model, 'When do you open?'));
            posix_kill(posix_getpid(), SIGKILL);
        }
        $this->assertGreaterThan(0, $pid, 'fork failed');
        $deadline = microtime(true) + 60;
        do {
            $done = pcntl_waitpid($pid, $status, WNOHANG);
            usleep(20000);
        } while ($done === 0 && microtime(true) < $deadline);
        if ($done === 0) {
            posix_kill($pid, SIGKILL);
            pcntl_waitpid($pid, $status);
        }
        $got = (string) file_get_contents($pipe);
        unlink($pipe);
        $this->assertNotSame(0, $done, 'the child hung');
        $this->assertSame($expected, $got);
        $this->assertSame($expected, self::ask($model, 'When do you open?'), 'the parent still works');
    }

    /**
     * Run the system prompts numbered $order in turn in a fresh process with
     * `infer.prompt_cache_mb` = $mb; one result per call, then the phpinfo()
     * counts.
     *
     * @return array{0: list<array{cached: int, prompt: int, cache: string}>, 1: array{hits: int, misses: int, evictions: int}}
     */
    private static function inTurn(array $order, int $mb): array
    {
        $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension(), '-d', "infer.prompt_cache_mb=$mb",
            __DIR__ . '/support/prompt-cache-steps.php', json_encode($order), self::modelPath()];
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $lines = self::jsonLinesOf($proc, $pipes);
        $counts = array_pop($lines);
        return [$lines, $counts];
    }

    /** Tokens of system prompt $n on its own: what a call under it can take from a cache, at least. */
    private static function systemTokens(int $n): int
    {
        require_once __DIR__ . '/support/prompt-cache-prompts.php';
        return self::model()->countTokens(prompt_cache_system($n));
    }

    /** @return list<int> */
    private static function alternating(int $prompts, int $rounds): array
    {
        $order = [];
        for ($r = 0; $r < $rounds; $r++) {
            array_push($order, ...range(0, $prompts - 1));
        }
        return $order;
    }

    public function testThreeAndEightAlternatingSystemPromptsAreEachReused(): void
    {
        foreach ([3, 8] as $prompts) {
            [$calls, $counts] = self::inTurn(self::alternating($prompts, 2), 128);
            foreach ($calls as $i => $call) {
                $which = $i % $prompts;
                if ($i < $prompts) {
                    $this->assertLessThan(16, $call['cached'], "$prompts prompts, first sight of prompt $which");
                    $this->assertSame($call['cached'] > 0 ? 'memory' : 'none', $call['cache']);
                } else {
                    $this->assertGreaterThanOrEqual(self::systemTokens($which), $call['cached'], "$prompts prompts, prompt $which again");
                    $this->assertSame('memory', $call['cache']);
                }
            }
            $this->assertSame(['hits' => $prompts, 'misses' => $prompts, 'evictions' => 0], $counts);
        }
    }

    public function testWithTheCacheOffOnlyTheLastPrefixIsReused(): void
    {
        [$calls, $counts] = self::inTurn([0, 1, 0, 0], 0);
        $this->assertSame([true, true, true, false], array_map(fn ($c) => $c['cached'] < 16, $calls));
        $this->assertSame(['hits' => 0, 'misses' => 0, 'evictions' => 0], $counts);
    }

    /**
     * A bound that holds two of the prefixes (their size from the model's
     * dimensions: f16 keys and values of every layer): the least recently
     * used goes when a third comes.
     */
    public function testTheLeastRecentlyUsedPrefixGoesPastTheBound(): void
    {
        $g = self::gguf();
        $arch = $g['general.architecture'];
        $perToken = 2 * 2 * $g["$arch.block_count"] * $g["$arch.attention.head_count_kv"]
            * intdiv($g["$arch.embedding_length"], $g["$arch.attention.head_count"]);
        $entry = $perToken * (self::systemTokens(0) + 20);
        $mb = intdiv((int) (2.5 * $entry), 1 << 20);
        $this->assertGreaterThan(2 * $entry, $mb << 20, 'two prefixes fit');
        $this->assertLessThan(3 * $entry, $mb << 20, 'three do not');
        // 0, 1, 2 (0 goes); 1 from the cache; 0 evaluated again (2 goes); 2 evaluated again.
        [$calls] = self::inTurn([0, 1, 2, 1, 0, 2], $mb);
        $reused = array_map(fn ($c) => $c['cached'] >= 16, $calls);
        $this->assertSame([false, false, false, true, false, false], $reused);
    }

    public function testTheSettingCannotBeChangedFromAScript(): void
    {
        $this->assertFalse(ini_set('infer.prompt_cache_mb', '1'));
        $this->assertFalse(ini_set('infer.prompt_cache_min_tokens', '1'));
        $this->assertNotSame('1', ini_get('infer.prompt_cache_mb'));
    }

    public function testTimingsSayWhereTheTimeWent(): void
    {
        $model = Model::load(self::modelPath());
        $first = $model->chat(Prompt::system(self::SYSTEM)->withUser('When do you open?'), maxTokens: 4);
        $t = $first->timings();
        $this->assertSame(['prompt_ms', 'generation_ms', 'prompt_tokens_per_second', 'tokens_per_second', 'cached_tokens', 'forced_tokens', 'sampled_tokens', 'lookup_proposed', 'lookup_accepted', 'generation_steps', 'cache'], array_keys($t));
        $this->assertSame('none', $t['cache']);
        $this->assertGreaterThan(0.0, $t['prompt_ms']);
        $this->assertEqualsWithDelta($first->promptTokens() * 1000 / $t['prompt_ms'], $t['prompt_tokens_per_second'], 1e-6);
        $this->assertEqualsWithDelta($first->tokensGenerated() * 1000 / $t['generation_ms'], $t['tokens_per_second'], 1e-6);
        $stream = $model->stream(Prompt::system(self::SYSTEM)->withUser('When do you close?'), maxTokens: 4);
        foreach ($stream as $piece) {
        }
        $s = $stream->response()->timings();
        $this->assertSame('memory', $s['cache']);
        $this->assertSame($stream->response()->cachedTokens(), $s['cached_tokens']);
        $this->assertGreaterThan(0, $s['cached_tokens']);
    }

    /**
     * The prompts of chatMany() start from the prefixes the process keeps
     * (those saved by contexts of as many sequences: llama.cpp writes the
     * count into a state): a prompt that follows another in its sequence
     * does at once, and every prompt of the next call. A partial hit is
     * deterministic: the same call twice gives the same texts.
     */
    public function testChatManyStartsFromCachedPrefixes(): void
    {
        require_once __DIR__ . '/support/prompt-cache-prompts.php';
        $model = Model::load(self::modelPath());
        $system = prompt_cache_system(4);
        $prompts = array_map(fn ($i) => Prompt::system($system)->withUser("Question $i?"), range(1, 4));
        $first = $model->chatMany($prompts, maxTokens: 6, options: ['parallel' => 2]);
        $again = $model->chatMany($prompts, maxTokens: 6, options: ['parallel' => 2]);
        $prefix = self::systemTokens(4);
        $this->assertSame([false, false, true, true], array_map(fn ($r) => $r->cachedTokens() >= $prefix, $first));
        foreach ($again as $i => $r) {
            $this->assertGreaterThanOrEqual($prefix, $r->cachedTokens(), "prompt $i");
            $this->assertSame('memory', $r->timings()['cache']);
            $this->assertSame($r->text(), $first[$i]->text(), "prompt $i twice");
        }
    }
}
