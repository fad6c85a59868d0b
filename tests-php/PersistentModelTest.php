<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Model;
use Displace\Infer\ModelLoadException;
use Displace\Infer\Prompt;
use Displace\Infer\Tests\Support\BuiltInServer;
use Displace\Infer\Tests\Support\Fpm;

require_once __DIR__ . '/support/BuiltInServer.php';
require_once __DIR__ . '/support/Fpm.php';
require_once __DIR__ . '/../examples/extraction.php';

/**
 * `Model::load($path, ['persistent' => true])`: the process keeps the model
 * (weights, context, prompt cache) after the request, keyed by the file's
 * identity and the load options, at most `infer.max_persistent_models` of
 * them, least recently used evicted.
 *
 * Reuse is proven without timing: by the number of loads the process made
 * (phpinfo()), and by the prompt tokens a call took from the cache
 * (Response::cachedTokens()), which only a kept context can have.
 *
 * Each scenario runs in a process of its own (support/persistent-steps.php),
 * so that what one keeps cannot leak into another, or into this one.
 */
final class PersistentModelTest extends InferTestCase
{
    private const SYSTEM = 'You are the help desk of a small library. Answer in one short sentence.';
    private const PERSISTENT = ['persistent' => true];

    private ?Fpm $fpm = null;

    /** @var list<string> */
    private array $copies = [];

    protected function tearDown(): void
    {
        $this->fpm?->stop();
        foreach ($this->copies as $path) {
            @unlink($path);
        }
        parent::tearDown();
    }

    /**
     * Run $steps in a fresh PHP process; return its pid line, one result per
     * step, and its stderr.
     *
     * @return array{0: array, 1: list<array>, 2: string}
     */
    private static function steps(array $steps, int $maxModels = 2, array $ini = []): array
    {
        $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension(), '-d', "infer.max_persistent_models=$maxModels"];
        foreach ($ini as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        array_push($cmd, __DIR__ . '/support/persistent-steps.php', json_encode($steps));
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $stdout = stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);
        proc_close($proc);
        return self::parse($stdout, $stderr);
    }

    /** @return array{0: array, 1: list<array>, 2: string} */
    private static function parse(string $stdout, string $stderr): array
    {
        $lines = [];
        foreach (explode("\n", trim($stdout)) as $line) {
            $decoded = json_decode($line, true);
            if (!is_array($decoded)) {
                $stderr .= $line;
                continue;
            }
            if (isset($decoded['error'])) {
                self::fail("step failed: {$decoded['error']}");
            }
            $lines[] = $decoded;
        }
        self::assertNotEmpty($lines, "no output; stderr: $stderr");
        return [array_shift($lines), $lines, $stderr];
    }

    /** A copy of the model file at a new path (so a new inode). */
    private function copy(): string
    {
        $path = tempnam(sys_get_temp_dir(), 'infer-copy-') . '.gguf';
        $this->copies[] = $path;
        $this->copies[] = substr($path, 0, -5);
        copy(self::modelPath(), $path);
        return $path;
    }

    /** What a model that has never been used answers (the independent reference). */
    private static function fresh(string $question): string
    {
        $model = Model::load(self::modelPath());
        return $model->chat(Prompt::system(self::SYSTEM)->withUser($question), maxTokens: 12, options: ['cache_prompt' => false])->text();
    }

    public function testASecondLoadInTheProcessFindsTheModelAndItsPromptCache(): void
    {
        $path = self::modelPath();
        $steps = [
            ['load', 'a', $path, self::PERSISTENT], ['ask', 'a', 'When do you open?'], ['unset', 'a'],
            ['load', 'b', $path, self::PERSISTENT], ['ask', 'b', 'Can I renew a book online?'], ['info'],
        ];
        [, [$load1, $ask1, , $load2, $ask2, $info]] = self::steps($steps);
        $this->assertSame(['loads' => 1, 'persistent' => true], $load1);
        $this->assertSame(['loads' => 1, 'persistent' => true], $load2, 'the second load read no file');
        $this->assertSame(0, $ask1['cached']);
        // The system turn is the shared prefix: it came from the kept cache.
        $this->assertGreaterThanOrEqual(self::model()->countTokens(self::SYSTEM), $ask2['cached']);
        $this->assertLessThan($ask2['prompt'], $ask2['cached']);
        $this->assertSame(self::fresh('When do you open?'), $ask1['text']);
        $this->assertSame(self::fresh('Can I renew a book online?'), $ask2['text'], 'reuse changes no output');
        $this->assertSame(['held' => 1, 'loads' => 1, 'models' => [[$path, 2]], 'ini' => '2'], $info);

        // The same steps without 'persistent': every load reads the file, no cache survives.
        $plain = array_map(static fn (array $s): array => $s[0] === 'load' ? [$s[0], $s[1], $s[2], []] : $s, $steps);
        [, [$load1, , , , $ask2, $info]] = self::steps($plain);
        $this->assertSame(0, $ask2['cached']);
        $this->assertSame(['loads' => 0, 'persistent' => false], $load1);
        $this->assertSame(0, $info['held']);
    }

    public function testTheLeastRecentlyUsedModelIsEvicted(): void
    {
        [$a, $b, $c] = [self::modelPath(), $this->copy(), $this->copy()];
        $loads = static fn (array $results): array => array_column($results, 'loads');
        $steps = [
            ['load', 'a', $a, self::PERSISTENT], ['load', 'b', $b, self::PERSISTENT],
            ['load', 'a', $a, self::PERSISTENT], // a is now the more recent
            ['load', 'c', $c, self::PERSISTENT], // evicts b
            ['load', 'a', $a, self::PERSISTENT], ['load', 'b', $b, self::PERSISTENT], // b again: evicts c
            ['info'],
        ];
        [, $results] = self::steps($steps);
        $info = array_pop($results);
        $this->assertSame([1, 2, 2, 3, 3, 4], $loads($results));
        $this->assertSame([[$b, 1], [$a, 3]], $info['models'], 'most recent first, with the loads each answered');

        // A table of one keeps only the last; a table of none keeps nothing.
        [, $results] = self::steps(array_slice($steps, 0, 6), 1);
        $this->assertSame([1, 2, 3, 4, 5, 6], $loads($results));
        [, $results] = self::steps([['load', 'a', $a, self::PERSISTENT], ['ask', 'a', 'Hi'], ['unset', 'a'],
            ['load', 'a', $a, self::PERSISTENT], ['ask', 'a', 'Hi'], ['info']], 0);
        $this->assertSame(0, $results[4]['cached']);
        $this->assertSame([2, 0, 'models' => [], 'ini' => '0'], [$results[3]['loads'], $results[5]['held'], 'models' => $results[5]['models'], 'ini' => $results[5]['ini']]);
    }

    public function testAFileReplacedOrTouchedIsLoadedAfresh(): void
    {
        $path = $this->copy();
        $replacement = $this->copy();
        // One process: load, replace the file by rename (new inode), load, touch (new mtime), load, load.
        $script = [
            ['load', 'a', $path, self::PERSISTENT],
            ['replace', $replacement, $path],
            ['load', 'b', $path, self::PERSISTENT],
            ['touch', $path],
            ['load', 'c', $path, self::PERSISTENT],
            ['load', 'd', $path, self::PERSISTENT],
        ];
        [, $results] = self::runWithFileOps($script);
        $this->assertSame([1, 2, 3, 3], $results);
    }

    /**
     * Like steps(), with 'replace' (rename a file over another) and 'touch'
     * (set a new modification time) steps done by the same process.
     *
     * @return array{0: array, 1: list<int>}
     */
    private static function runWithFileOps(array $steps): array
    {
        $code = '$loads = [];' . "\n";
        foreach ($steps as $i => $step) {
            $code .= match ($step[0]) {
                'load' => sprintf('$m%d = Displace\Infer\Model::load(%s, %s); ob_start(); phpinfo(INFO_MODULES); preg_match("/persistent model loads => (\\\\d+)/", ob_get_clean(), $x); $loads[] = (int) $x[1];', $i, var_export($step[2], true), var_export($step[3], true)),
                'replace' => sprintf('copy(%s, %s . ".new"); rename(%2$s . ".new", %2$s);', var_export($step[1], true), var_export($step[2], true)),
                'touch' => sprintf('touch(%s, time() + 100); clearstatcache();', var_export($step[1], true)),
            } . "\n";
        }
        $code .= 'echo json_encode($loads);';
        $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension(), '-d', 'infer.max_persistent_models=4', '-r', $code];
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $stdout = stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);
        proc_close($proc);
        $loads = json_decode($stdout, true);
        self::assertIsArray($loads, "stdout: $stdout; stderr: $stderr");
        return [[], $loads];
    }

    public function testOtherLoadOptionsAreAnotherModel(): void
    {
        $path = self::modelPath();
        [, $results] = self::steps([
            ['load', 'a', $path, ['persistent' => true, 'n_threads' => 1]],
            ['load', 'b', $path, ['persistent' => true, 'n_threads' => 2]],
            ['load', 'c', $path, ['persistent' => true, 'n_threads' => 1]],
            ['load', 'd', $path, ['persistent' => true, 'use_mmap' => false]],
            ['info'],
        ], 4);
        $this->assertSame([1, 2, 2, 3], array_column(array_slice($results, 0, 4), 'loads'));
        $this->assertSame(3, $results[4]['held']);
    }

    public function testCloseFreesThePersistentModelForTheProcess(): void
    {
        $path = self::modelPath();
        [, $r] = self::steps([
            ['load', 'a', $path, self::PERSISTENT], ['load', 'b', $path, self::PERSISTENT],
            ['close', 'a'], ['info'],
            ['ask', 'b', 'When do you open?'], // another object of the request keeps working
            ['load', 'c', $path, self::PERSISTENT], ['info'],
        ]);
        $this->assertSame([1, 1], [$r[0]['loads'], $r[1]['loads']]);
        $this->assertSame(['persistent' => false], $r[2]);
        $this->assertSame(0, $r[3]['held'], 'close() dropped it from the table');
        $this->assertSame(self::fresh('When do you open?'), $r[4]['text']);
        $this->assertSame(['loads' => 2, 'persistent' => true], $r[5], 'loaded afresh after close()');
        $this->assertSame(1, $r[6]['held']);

        $model = Model::load($path, self::PERSISTENT);
        $model->close();
        $this->assertThrows(\Displace\Infer\InferenceException::class, 'model has been closed', fn () => $model->countTokens('x'));
    }

    public function testAForkedChildReusesTheWeightsWithAContextOfItsOwn(): void
    {
        self::requireExtension('pcntl');
        $path = self::modelPath();
        [, [, $parent, $child]] = self::steps([
            ['load', 'a', $path, self::PERSISTENT], ['ask', 'a', 'When do you open?'],
            ['fork-ask', $path, self::PERSISTENT, 'When do you open?'],
        ], ini: ['infer.prompt_cache_mb' => '0']);
        $this->assertSame($parent['text'], $child['text']);
        $this->assertSame(1, $child['loads'], 'the child found the kept model');
        // The parent's context holds this very prompt, which would be reused
        // whole; the child builds a context of its own and never holds the
        // parent's cells. (The process's prompt cache is off here: a state
        // it saved before the fork is plain memory, valid for the same
        // weights, and would give the whole prompt too, with its logits.)
        $this->assertSame(0, $child['cached'], "the parent's context is not the child's");
    }

    public function testTheSettingIsReadOnlyAtRunTimeAndShownByPhpinfo(): void
    {
        $this->assertSame('2', ini_get('infer.max_persistent_models'));
        $this->assertFalse(ini_set('infer.max_persistent_models', '5'), 'a php.ini (system) setting');
        [, [$info]] = self::steps([['info']], 7);
        $this->assertSame(['held' => 0, 'loads' => 0, 'models' => [], 'ini' => '7'], $info);
    }

    public function testPersistentMustBeABool(): void
    {
        $this->assertThrows(ModelLoadException::class, 'option "persistent" must be a bool, got string',
            fn () => Model::load(self::modelPath(), ['persistent' => 'yes']));
        $this->assertThrows(ModelLoadException::class, 'option "persistent" must be a bool, got int',
            fn () => Model::load(self::modelPath(), ['persistent' => 1]));
    }

    /**
     * Under PHP-FPM (one worker, so every request meets the same process):
     * the second request finds the model loaded and its system prompt
     * cached; a request killed by its time limit in the middle of a
     * generation leaves the model usable and consistent for the next one.
     * @group fpm
     */
    public function testPhpFpmKeepsTheModelAcrossRequestsAndTimeouts(): void
    {
        self::requireExtension('posix');
        $this->fpm = $fpm = new Fpm(1, self::modelPath());
        $script = __DIR__ . '/support/persistent-steps.php';
        $path = self::modelPath();
        $request = function (array $steps, int $expected = 2) use ($fpm, $script): array {
            [$stdout, $stderr] = $fpm->get($script, ['steps' => json_encode($steps)]);
            $parsed = self::parse($stdout, $stderr);
            $this->assertGreaterThanOrEqual($expected, count($parsed[1]), "steps answered; output: $stdout; stderr: $stderr; log: " . $fpm->log());
            return $parsed;
        };
        $ask = static fn (string $q): array => [['load', 'm', $path, self::PERSISTENT], ['ask', 'm', $q]];

        [$pid1, [$load1, $ask1]] = $request($ask('When do you open?'));
        [$pid2, [$load2, $ask2]] = $request($ask('Can I renew a book online?'));
        [$pid3, $steps3, $output3] = $request([['load', 'm', $path, self::PERSISTENT], ['timeout', 'm']], 1);
        [$pid4, [$load4, $ask4]] = $request($ask('When do you open?'));

        $this->assertSame(1, count(array_unique([$pid1['pid'], $pid2['pid'], $pid3['pid'], $pid4['pid']])), 'one worker served all');
        $this->assertSame([1, 1, 1], [$load1['loads'], $load2['loads'], $load4['loads']], 'loaded once for all requests');
        $this->assertSame(0, $ask1['cached']);
        $this->assertGreaterThanOrEqual(self::model()->countTokens(self::SYSTEM), $ask2['cached'], 'the system prompt was cached by the previous request');
        $this->assertStringContainsString('Maximum execution time of 1 second exceeded', $output3);
        $this->assertCount(1, $steps3, 'the generation did not finish');
        $this->assertSame($ask1['text'], $ask4['text'], 'the model is consistent after the timeout');
        $this->assertSame(self::fresh('When do you open?'), $ask4['text']);
        $log = $fpm->log();
        $this->assertStringNotContainsString('exited', $log, 'no worker died (a hard timeout would have killed it)');
    }

    /** `php -S` serves requests from one process: the second request finds the model of the first. */
    public function testThePhpBuiltInServerKeepsTheModelAcrossRequests(): void
    {
        $server = new BuiltInServer((string) realpath(__DIR__ . '/../examples/extract-endpoint.php'), self::modelPath());
        try {
            $get = static fn (string $note): ?array => json_decode($server->get(['note' => $note])[0] ?? 'null', true);
            $first = $get('Maria is 31 years old and lives in Lisbon.');
            $second = $get('Tom, a 52-year-old baker from Leeds.');
            $expected = \extract_person(Model::load(self::modelPath()), 'Maria is 31 years old and lives in Lisbon.')->json();
            $this->assertSame($expected, $first['data'] ?? $first);
            $this->assertSame(0, $first['cached']);
            $this->assertSame($first['pid'], $second['pid']);
            $this->assertGreaterThan(self::model()->countTokens(\EXTRACTION_INSTRUCTIONS . \EXTRACTION_EXAMPLES), $second['cached'], 'the second request found the first one\'s cache');
        } finally {
            $server->stop();
        }
    }
}
