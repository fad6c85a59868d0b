<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Model;
use Displace\Infer\Prompt;

/**
 * A model keeps its context between calls and reuses the shared prompt
 * prefix (`cache_prompt`, on by default). Reuse never changes the output, and
 * a forked child process gets a working model of its own.
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
}
