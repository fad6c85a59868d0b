<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

/**
 * Processes that generate at once share the cores through a registry of
 * flock()ed slot files (/dev/shm/infer-<uid>). Observed from outside, with
 * PHP's own flock(): a generating process at default settings holds a slot
 * while it generates and frees it afterwards; one with a fixed n_threads
 * never takes one.
 */
final class ThreadSharingTest extends InferTestCase
{
    private static function registry(): string
    {
        return self::slotRegistry(posix_getuid());
    }

    /**
     * Start a PHP process that loads the model with $options, says "go" on
     * stdout, then generates for $seconds; watch the registry meanwhile.
     *
     * @return array{max_held: int, after: int}
     */
    private function watchGenerator(array $options, float $seconds): array
    {
        $code = <<<'PHP'
            $model = Displace\Infer\Model::load($argv[1], json_decode($argv[2], true));
            $model->raw('warm up', maxTokens: 1);
            echo "go\n";
            $until = microtime(true) + (float) $argv[3];
            while (microtime(true) < $until) {
                $model->raw('Once upon a time', maxTokens: 48, options: ['cache_prompt' => false]);
            }
            PHP;
        $cmd = [
            PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension(), '-r', $code,
            self::modelPath(), json_encode($options, JSON_FORCE_OBJECT), (string) $seconds,
        ];
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $this->assertIsResource($proc);
        // (stderr is read only once the process has ended: reading it now would wait for that.)
        $this->assertSame("go\n", fgets($pipes[1]), 'the generator did not start');
        $maxHeld = 0;
        do {
            $maxHeld = max($maxHeld, self::heldSlots(self::registry()));
            usleep(20000);
            $status = proc_get_status($proc);
        } while ($status['running']);
        $stderr = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $this->assertSame(0, $status['exitcode'], "generator failed: $stderr");
        proc_close($proc);
        return ['max_held' => $maxHeld, 'after' => self::heldSlots(self::registry())];
    }

    public function testAGeneratingProcessHoldsASlotAndReleasesIt(): void
    {
        $seen = $this->watchGenerator([], 2.0);
        $this->assertSame(1, $seen['max_held'], 'one generating process holds exactly one slot');
        $this->assertSame(0, $seen['after'], 'the slot is released when the process is done');
    }

    public function testASlotIsFreedWhenItsProcessIsKilled(): void
    {
        $code = <<<'PHP'
            $model = Displace\Infer\Model::load($argv[1]);
            echo "go\n";
            while (true) {
                $model->raw('Once upon a time', maxTokens: 48, options: ['cache_prompt' => false]);
            }
            PHP;
        $cmd = [PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension(), '-r', $code, self::modelPath()];
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $this->assertIsResource($proc);
        try {
            $this->assertSame("go\n", fgets($pipes[1]), 'the generator did not start');
            $deadline = microtime(true) + 60;
            while (self::heldSlots(self::registry()) === 0 && microtime(true) < $deadline) {
                usleep(10000);
            }
            $this->assertSame(1, self::heldSlots(self::registry()), 'the generator holds its slot');
        } finally {
            // Killed on every path: the generator never stops by itself.
            proc_terminate($proc, 9);
            while (proc_get_status($proc)['running']) {
                usleep(10000);
            }
            fclose($pipes[1]);
            fclose($pipes[2]);
            proc_close($proc);
        }
        $this->assertSame(0, self::heldSlots(self::registry()), 'the kernel released the killed process\'s slot');
    }

    /**
     * Another user makes a user's registry first (mode 0777) and plants a
     * link for every slot, pointing into a directory the user can write to:
     * the registry is refused (the call runs on every core, as without one)
     * and no link is followed — before, the user's process created a file
     * at every link's target.
     */
    public function testARegistryAnotherUserMadeIsRefusedAndItsLinksNotFollowed(): void
    {
        if (posix_getuid() !== 0) {
            $this->fail('this test runs as root (as make test does), to act as two other users');
        }
        $victim = posix_getpwnam('nobody');
        $attacker = posix_getpwnam('daemon');
        $registry = "/dev/shm/infer-{$victim['uid']}";
        $targets = sys_get_temp_dir() . '/infer-registry-targets-' . getmypid();
        exec('rm -rf ' . escapeshellarg($registry));
        mkdir($targets, 0700);
        chown($targets, $victim['uid']);
        try {
            $as = fn (array $user, string $command) => exec("setpriv --reuid={$user['uid']} --regid={$user['gid']} --clear-groups sh -c " . escapeshellarg($command) . ' 2>&1', $out, $status) !== false && $status === 0;
            $plant = 'mkdir -m 0777 ' . escapeshellarg($registry) . ' && for i in $(seq 0 63); do ln -s ' . escapeshellarg($targets) . '/slot-$i ' . escapeshellarg($registry) . '/slot-$i; done';
            $this->assertTrue($as($attacker, $plant), 'the attacker planted the registry');
            $code = 'echo Displace\Infer\Model::load($argv[1])->chat(Displace\Infer\Prompt::user("Hi"), 4)->text() !== "" ? "answered" : "empty";';
            $cmd = 'setpriv --reuid=' . $victim['uid'] . ' --regid=' . $victim['gid'] . ' --clear-groups ' . escapeshellarg(PHP_BINARY)
                . ' -n -d extension=' . escapeshellarg(DefaultModel::extension()) . ' -r ' . escapeshellarg($code) . ' ' . escapeshellarg(self::modelPath()) . ' 2>&1';
            $this->assertSame('answered', (string) shell_exec($cmd));
            $this->assertSame(['.', '..'], scandir($targets), 'no link of the planted registry was followed');
        } finally {
            exec('rm -rf ' . escapeshellarg($registry) . ' ' . escapeshellarg($targets));
        }
    }

    public function testAFixedThreadCountDoesNotShare(): void
    {
        $seen = $this->watchGenerator(['n_threads' => 2], 2.0);
        $this->assertSame(0, $seen['max_held'], 'a process with n_threads set takes no slot');
    }

    /**
     * A model of fixed threads keeps its pool's threads polling while a call
     * evaluates, as llama.cpp's tools do, but they sleep once the call has
     * returned: they used to spin for about 0.1 s after each call, on the
     * cores the PHP code that follows (another model's call, another
     * process) needed. Measured as the CPU time the process uses while it
     * sleeps right after each kind of call.
     */
    public function testAFixedPoolUsesNoCpuOnceACallHasReturned(): void
    {
        $cpuMs = static function (): float {
            $u = getrusage();
            return ($u['ru_utime.tv_sec'] + $u['ru_stime.tv_sec']) * 1000 + ($u['ru_utime.tv_usec'] + $u['ru_stime.tv_usec']) / 1000;
        };
        $model = \Displace\Infer\Model::load(self::modelPath(), ['n_threads' => 2]);
        $embedder = \Displace\Infer\Model::load(self::embeddingModelPath(), ['embedding' => true, 'n_threads' => 2]);
        $calls = [
            'chat' => fn () => $model->chat(\Displace\Infer\Prompt::user('Hi'), maxTokens: 8),
            'chatMany' => fn () => $model->chatMany([\Displace\Infer\Prompt::user('Hi'), \Displace\Infer\Prompt::user('Hello')], maxTokens: 8),
            'stream' => fn () => iterator_to_array($model->stream(\Displace\Infer\Prompt::user('Hi'), maxTokens: 8), false),
            'embed' => fn () => $embedder->embed('The library opens at nine.'),
        ];
        foreach ($calls as $name => $call) {
            $call();
            $before = $cpuMs();
            usleep(300_000);
            $spent = $cpuMs() - $before;
            $this->assertLessThan(30.0, $spent, "$name: CPU time used in the 300 ms after the call returned");
        }
    }

    /**
     * The thread count of a call changes with the load on the machine (the
     * sharing above), so it must never change a greedy output. It would with
     * llama.cpp's CPU flash-attention kernel, whose reduction order depends on
     * the thread count once the context is long: this prompt of ~900 tokens
     * gave a different output on 1 and 2 threads with it on.
     * @group slow
     */
    public function testGreedyOutputDoesNotDependOnTheThreadCount(): void
    {
        $note = str_repeat('The library opens at nine and closes at five. Books can be renewed online or at the desk. ', 20);
        $outputs = [];
        foreach ([1, 2] as $threads) {
            $model = \Displace\Infer\Model::load(self::modelPath(), ['n_threads' => $threads]);
            foreach ([300, 900] as $chars) {
                $prompt = substr($note, 0, $chars * 4) . "\nSummary:";
                $outputs[$chars][$threads] = $model->raw($prompt, maxTokens: 64, options: ['cache_prompt' => false]);
            }
            $model->close();
        }
        foreach ($outputs as $chars => $byThreads) {
            $this->assertCount(1, array_unique($byThreads), "prompt of {$chars}x4 characters: " . var_export($byThreads, true));
        }
    }
}
