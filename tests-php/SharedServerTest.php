<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Image;
use Displace\Infer\Model;
use Displace\Infer\ModelLoadException;
use Displace\Infer\Prompt;
use Displace\Infer\Tests\Support\BuiltInServer;
use Displace\Infer\Tests\Support\Fpm;
use Displace\Infer\Tests\Support\LlamaServer;

require_once __DIR__ . '/support/Fpm.php';
require_once __DIR__ . '/support/LlamaServer.php';
require_once __DIR__ . '/support/BuiltInServer.php';

/**
 * `Model::load($path, ['shared' => true])`: one llama-server for every PHP
 * process of an installation, started by the first process that needs it
 * (php.ini `infer.server_*`), supervised by `infer-serve`. Each scenario runs
 * in processes of its own (support/shared-steps.php, PHP-FPM, `php -S`) with
 * a state directory of its own; llama-server itself judges the outputs (a
 * server started by hand with the same settings).
 *
 * @group slow
 */
final class SharedServerTest extends InferTestCase
{
    private const SLOTS = 4;
    private const CTX = 2048;
    private const THREADS = 2;

    private string $dir = '';
    /** The state directory's path at the start, which scratch directories are named after. */
    private string $base = '';
    /** @var list<int> servers to stop at the end, whatever happened */
    private array $servers = [];

    protected function setUp(): void
    {
        parent::setUp();
        self::requireExtension('posix');
        $this->dir = sys_get_temp_dir() . '/infer-shared-test-' . getmypid() . '-' . bin2hex(random_bytes(4));
        $this->base = $this->dir;
    }

    protected function tearDown(): void
    {
        $record = $this->record();
        if ($record !== null) {
            $this->servers[] = $record['supervisor'];
            $this->servers[] = $record['server'];
        }
        foreach ($this->servers as $pid) {
            if ($pid > 0) {
                @posix_kill($pid, SIGKILL);
            }
        }
        foreach ([$this->dir, ...$this->scratches] as $path) {
            if ($path !== '' && (is_dir($path) || is_link($path))) {
                exec('rm -rf ' . escapeshellarg($path));
            }
        }
        parent::tearDown();
    }

    /** @return array<string, string> the php.ini settings of this test's installation */
    private function ini(array $more = []): array
    {
        return $more + [
            'infer.server_model' => self::modelPath(),
            'infer.server_binary' => LlamaServer::binary(),
            'infer.server_dir' => $this->dir,
            'infer.server_slots' => (string) self::SLOTS,
            'infer.server_ctx' => (string) self::CTX,
            'infer.server_threads' => (string) self::THREADS,
        ];
    }

    /** @return list<string> */
    private function command(array $ini, array $steps, ?string $path = null): array
    {
        $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension()];
        foreach ($ini as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        return array_merge($cmd, [__DIR__ . '/support/shared-steps.php', $path ?? self::modelPath()], $steps);
    }

    /**
     * Run the steps in a PHP process of its own; its answers, one per step.
     *
     * @return list<array<string, mixed>>
     */
    private function steps(array $steps, array $ini = [], ?string $path = null): array
    {
        // With a deadline: a process that leaked its pipes to a server that
        // never stops would hold the test forever.
        [$answers, $stderr, $finished] = $this->stepsWithin(300, $steps, $ini, null, $path);
        $this->assertTrue($finished, 'the steps finished within 300 s');
        $this->assertSame('', $stderr, 'nothing on stderr');
        return $answers;
    }

    /** @return array{supervisor: int, server: int}|null the pids of the supervisor's record */
    private function record(): ?array
    {
        // Only a regular file: opening a FIFO would wait for a writer.
        $path = $this->dir . '/server.json';
        $text = is_file($path) && !is_link($path) ? @file_get_contents($path) : false;
        $record = $text === false ? null : json_decode($text, true);
        if (!is_array($record)) {
            return null;
        }
        return ['supervisor' => $record['supervisor']['pid'], 'server' => $record['server']['pid']];
    }

    private static function alive(int $pid): bool
    {
        return $pid > 0 && posix_kill($pid, 0);
    }

    private function waitUntilGone(int $pid, float $seconds): bool
    {
        $deadline = microtime(true) + $seconds;
        while (microtime(true) < $deadline) {
            if (!self::alive($pid) || str_contains((string) @file_get_contents("/proc/$pid/stat"), ') Z ')) {
                return true;
            }
            usleep(100000);
        }
        return false;
    }

    private function assertOk(array $answer): void
    {
        $this->assertArrayNotHasKey('error', $answer, json_encode($answer));
    }

    public function testSharedWithoutTheSettingIsRefused(): void
    {
        $this->assertThrows(ModelLoadException::class, "'shared' => true needs the shared server: set php.ini infer.server_model", fn () => Model::load(self::modelPath(), ['shared' => true]));
    }

    public function testLoadOptionsBesideSharedAreRefused(): void
    {
        [$answer] = $this->steps(['with-threads']);
        $this->assertStringContainsString('"n_threads" applies to a model loaded in this process; a shared model is served with the server\'s settings (php.ini infer.server_*)', $answer['error']);
        $this->assertNull($this->record(), 'no server was started');
    }

    public function testAnotherModelThanTheServersIsRefused(): void
    {
        $other = $this->tempFile("GGUF\x03\x00\x00\x00" . str_repeat("\0", 32));
        [$answer] = $this->steps(['chat'], path: $other);
        $this->assertSame('Displace\Infer\ModelLoadException: the shared server serves ' . self::modelPath() . " (php.ini infer.server_model), not $other; load this model without 'shared'", $answer['error']);
        $this->assertNull($this->record(), 'no server was started');
    }

    /** @group fpm */
    public function testOneServerForFpmWorkersAndTheBuiltInServerWithTheOutputsOfAServerStartedByHand(): void
    {
        self::requireExtension('pcntl');
        $fpm = new Fpm(4, self::modelPath(), $this->ini());
        try {
            $record = $this->record();
            $this->assertNotNull($record, 'the master started the server before any request');
            $stat = (string) file_get_contents('/proc/' . $fpm->workers()[0] . '/stat');
            $master = (int) explode(' ', substr($stat, strrpos($stat, ')') + 2))[1];
            $this->assertFileExists("{$this->dir}/clients/$master", 'the master is a client: the server lives as long as PHP-FPM');
            $script = __DIR__ . '/support/fpm-shared.php';
            // Eight requests at once, from eight client processes.
            $files = [];
            $children = [];
            for ($i = 0; $i < 8; $i++) {
                $files[$i] = tempnam(sys_get_temp_dir(), 'shared-answer-');
                $pid = pcntl_fork();
                if ($pid === 0) {
                    [$out] = $fpm->get($script, ['case' => ['chat', 'schema', 'stream'][$i % 3]], 120.0);
                    file_put_contents($files[$i], $out);
                    posix_kill(getmypid(), SIGKILL); // no shutdown of the parent's objects
                }
                $children[] = $pid;
            }
            foreach ($children as $pid) {
                pcntl_waitpid($pid, $status);
            }
            $answers = [];
            foreach ($files as $i => $file) {
                $answers[$i] = json_decode((string) file_get_contents($file), true);
                unlink($file);
                $this->assertIsArray($answers[$i], "request $i: " . $fpm->log());
                $this->assertOk($answers[$i]);
            }
            $record = $this->record();
            $this->assertNotNull($record, 'the server runs');
            $this->assertSame([$record['server']], array_values(array_unique(array_column($answers, 'server_pid'))), 'one server for every worker');
            $this->assertGreaterThan(1, count(array_unique(array_column($answers, 'worker'))), 'several workers served');
            foreach ($answers as $i => $a) {
                if ($a['case'] === 'schema') {
                    $value = json_decode($a['text'], true);
                    $this->assertIsArray($value, $a['text']);
                    $this->assertIsString($value['fruit'] ?? null, $a['text']);
                    $this->assertLessThanOrEqual(20, mb_strlen($value['fruit']), $a['text']);
                }
                if ($a['case'] === 'stream') {
                    $this->assertSame($a['text'], implode('', $a['pieces']), 'the stream is whole');
                    $this->assertNotSame('', $a['text']);
                }
            }
            // Greedy outputs, one request at a time, against a server started by
            // hand with the same settings.
            [$out] = $fpm->get($script, ['case' => 'chat'], 120.0);
            $viaFpm = json_decode($out, true);
            $this->assertOk($viaFpm);
            $builtIn = new BuiltInServer(__DIR__ . '/support/fpm-shared.php', self::modelPath(), $this->ini());
            try {
                [$body] = $builtIn->get(['case' => 'chat']) ?? [''];
                $viaBuiltIn = json_decode($body, true);
            } finally {
                $builtIn->stop();
            }
            $this->assertIsArray($viaBuiltIn);
            $this->assertOk($viaBuiltIn);
            $this->assertSame($record['server'], $viaBuiltIn['server_pid'], 'php -S uses the same server');
            $byHand = new LlamaServer(self::modelPath(), ['--parallel', (string) self::SLOTS, '--ctx-size', (string) (self::SLOTS * self::CTX), '-t', (string) self::THREADS]);
            try {
                $expected = Model::connect($byHand->url)->chat(Prompt::user('Name a fruit.'), 16)->text();
            } finally {
                $byHand->stop();
            }
            $this->assertSame($expected, $viaFpm['text']);
            $this->assertSame($expected, $viaBuiltIn['text']);
        } finally {
            $fpm->stop();
        }
        $this->assertTrue($this->waitUntilGone($record['server'], 8), 'the server stops when the last process of the installation is gone');
    }

    /**
     * With infer.server_mmproj the shared server loads the projector: a shared model takes images, and answers
     * as the model loaded in this process with the same projector.
     */
    public function testTheServersProjectorTakesImagesWithTheInProcessAnswers(): void
    {
        $mmproj = getenv('INFER_VISION_MODEL') ?: dirname(__DIR__) . '/models/SmolLM2-135M-colour-mmproj.gguf';
        $answers = $this->steps(['image:r', 'image:b'], $this->ini(['infer.server_mmproj' => $mmproj]));
        $local = Model::load(self::modelPath(), ['mmproj' => $mmproj]);
        foreach (['r' => "\xff\x00\x00", 'b' => "\x00\x00\xff"] as $i => $rgb) {
            $expected = $local->chat(Prompt::user([Image::fromPixels(28, 28, str_repeat($rgb, 28 * 28)), 'What colour is this image? Answer with one word.']), 16)->text();
            $answer = $answers[$i === 'r' ? 0 : 1];
            $this->assertArrayNotHasKey('error', $answer, json_encode($answer));
            $this->assertSame($expected, $answer['text']);
        }
        $this->assertStringContainsString('blue', $answers[1]['text']);
    }

    /**
     * With infer.server_lora the shared server loads the adapters: info() lists them, and a call chooses one
     * with its option `lora` and writes what the model loaded in this process with that adapter writes.
     */
    public function testTheServersAdaptersAreChosenPerCall(): void
    {
        $lora = getenv('INFER_LORA_MODEL') ?: dirname(__DIR__) . '/models/SmolLM2-135M-test-lora.gguf';
        $this->assertFileExists($lora, 'make lora-model');
        $name = basename($lora, '.gguf');
        $answers = $this->steps(["lora:$name:0.5", "lora:$name:0", 'lora:-'], $this->ini(['infer.server_lora' => $lora]));
        $local = Model::load(self::modelPath(), ['lora' => [['path' => $lora, 'name' => $name]]]);
        $expected = [
            $local->raw('The weather today is', 16, options: ['lora' => [$name => 0.5], 'cache_prompt' => false]),
            $local->raw('The weather today is', 16, options: ['lora' => [], 'cache_prompt' => false]),
            $local->raw('The weather today is', 16, options: ['cache_prompt' => false]),
        ];
        foreach ($answers as $i => $answer) {
            $this->assertArrayNotHasKey('error', $answer, json_encode($answer));
            $this->assertEquals([['name' => $name, 'path' => $lora, 'scale' => 1.0]], $answer['lora']); // the step's JSON writes 1.0 as 1
            $this->assertSame($expected[$i], $answer['text'], "step $i");
        }
        $this->assertNotSame($expected[0], $expected[1], 'the adapter changes the text');
    }

    public function testTwoProcessesRacingToStartItStartOne(): void
    {
        $procs = [];
        $pipeSets = [];
        for ($i = 0; $i < 3; $i++) {
            $procs[] = proc_open($this->command($this->ini(), ['chat']), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            $pipeSets[] = $pipes;
        }
        $pids = [];
        foreach ($procs as $i => $proc) {
            [$answer] = self::jsonLinesOf($proc, $pipeSets[$i]);
            $this->assertOk($answer);
            $pids[] = $answer['info']['server_pid'];
        }
        $this->assertCount(1, array_unique($pids), 'one server for the three');
        $this->assertSame(1, substr_count((string) file_get_contents($this->dir . '/server.log'), 'llama_server: listening on'), 'one start in the log');
    }

    public function testEmbeddingsAreRefusedWithWhatToDoInstead(): void
    {
        // The server runs a generative model; llama-server's own answer
        // ("start it with --embeddings") is not something a worker can do.
        $answers = $this->steps(['embed', 'embed-many', 'chat']);
        foreach ([0, 1] as $i) {
            $this->assertSame(
                "Displace\\Infer\\InferenceException: an embedding is not available through llama-server: the installation's shared server runs its model for generation; embed with an embedding model loaded in this process",
                $answers[$i]['error'] ?? null,
                $answers[$i]['step'],
            );
        }
        $this->assertOk($answers[2]);
    }

    public function testAServerKilledBetweenRequestsIsStartedAgainByTheNext(): void
    {
        $proc = proc_open($this->command($this->ini(), ['chat', 'wait', 'wait', 'chat']), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $first = json_decode((string) fgets($pipes[1]), true);
        $this->assertOk($first);
        $killed = $first['info']['server_pid'];
        posix_kill($killed, SIGKILL);
        $this->servers[] = $killed;
        $answers = self::jsonLinesOf($proc, $pipes);
        $last = end($answers);
        $this->assertOk($last);
        $this->assertNotSame($killed, $last['info']['server_pid'], 'a new server');
        $this->assertSame($first['text'], $last['text']);
    }

    public function testARequestInFlightWhenTheServerDiesThrowsAndTheNextSucceeds(): void
    {
        $proc = proc_open($this->command($this->ini(), ['chat', 'long', 'chat']), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $first = json_decode((string) fgets($pipes[1]), true);
        $this->assertOk($first);
        usleep(700000); // the long request is generating
        posix_kill($first['info']['server_pid'], SIGKILL);
        $answers = self::jsonLinesOf($proc, $pipes);
        $this->assertStringStartsWith('Displace\Infer\InferenceException: ', $answers[0]['error'] ?? '(no error)');
        $this->assertOk($answers[1]);
        $this->assertNotSame($first['info']['server_pid'], $answers[1]['info']['server_pid']);
        $this->assertSame($first['text'], $answers[1]['text']);
    }

    public function testARemovedStateDirectoryGetsANewServerAndTheOldOneStops(): void
    {
        $proc = proc_open($this->command($this->ini(), ['chat', 'wait', 'wait', 'chat']), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $first = json_decode((string) fgets($pipes[1]), true);
        $this->assertOk($first);
        $old = $first['info']['server_pid'];
        $this->servers[] = $old;
        exec('rm -rf ' . escapeshellarg($this->dir));
        $answers = self::jsonLinesOf($proc, $pipes);
        $last = end($answers);
        $this->assertOk($last);
        $this->assertNotSame($old, $last['info']['server_pid']);
        $this->assertTrue($this->waitUntilGone($old, 8), 'the server of the removed directory stops');
    }

    public function testAServerInUseIsNotIdle(): void
    {
        // Loads one second apart, under an idle time of two: one server.
        $answers = $this->steps(['chat', 'wait', 'wait', 'chat', 'wait', 'wait', 'chat'], ['infer.server_idle' => '2']);
        $this->assertOk($answers[0]);
        $this->assertOk($answers[6]);
        $this->assertSame($answers[0]['info']['server_pid'], $answers[6]['info']['server_pid']);
        $this->assertStringNotContainsString('unused for', (string) file_get_contents($this->dir . '/server.log'));
    }

    /**
     * A call that runs longer than the idle time is use for all its length
     * (it holds the state directory's `busy` lock): the server is not
     * stopped under it, and the next call finds the same server.
     */
    public function testACallLongerThanTheIdleTimeIsNotCutShort(): void
    {
        $answers = $this->steps(['slow', 'chat'], ['infer.server_idle' => '1']);
        $this->assertOk($answers[0]);
        $this->assertSame('length', $answers[0]['finish'], 'the call ran to its maxTokens');
        $this->assertGreaterThan(2.0, $answers[0]['seconds'], 'the call outlasted the idle time with a margin (1 s, looked at every 0.25 s)');
        $this->assertOk($answers[1]);
        $this->assertSame($answers[0]['info']['server_pid'], $answers[1]['info']['server_pid'], 'the same server answered the next call');
        $this->assertStringNotContainsString('unused for', (string) file_get_contents($this->dir . '/server.log'));
    }

    public function testAnIdleServerStops(): void
    {
        $answers = $this->steps(['chat', 'wait', 'wait', 'wait', 'wait', 'wait', 'chat'], ['infer.server_idle' => '1']);
        $this->assertOk($answers[0]);
        $this->assertOk($answers[6]);
        $this->assertNotSame($answers[0]['info']['server_pid'], $answers[6]['info']['server_pid'], 'stopped after 1 s unused, started again');
        $this->assertStringContainsString('infer-serve: stopping llama-server: unused for', (string) file_get_contents($this->dir . '/server.log'));
    }

    public function testAMissingModelIsAClearErrorWithoutAStart(): void
    {
        [$answer] = $this->steps(['chat'], ['infer.server_model' => '/nonexistent/model.gguf'], '/nonexistent/model.gguf');
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's model is unusable: model file not found: /nonexistent/model.gguf", $answer['error']);
        $this->assertNull($this->record());
    }

    public function testAModelTheServerCannotLoadFailsOnceAndIsNotStartedAgainAtOnce(): void
    {
        $broken = $this->tempFile("GGUF\x03\x00\x00\x00" . str_repeat("\xff", 64));
        $begin = microtime(true);
        $answers = $this->steps(['chat', 'chat'], ['infer.server_model' => $broken], $broken);
        $this->assertStringStartsWith('Displace\Infer\ModelLoadException: the shared server could not start: llama-server exited while starting: ', $answers[0]['error']);
        $this->assertStringContainsString("(its log: {$this->dir}/server.log)", $answers[0]['error']);
        $this->assertStringContainsString('the last start failed', $answers[1]['error'], 'the second request does not start it again');
        $this->assertNull($this->record(), 'no server left');
        $this->assertSame(1, substr_count((string) file_get_contents($this->dir . '/server.log'), 'infer-serve: llama-server exited'), 'one start');
        $this->assertLessThan(60, microtime(true) - $begin);
    }

    public function testAnotherUserIsDenied(): void
    {
        if (posix_getuid() !== 0) {
            $this->fail('this test runs as root (as make test does), to run a process as another user');
        }
        $this->assertOk($this->steps(['chat'])[0]);
        $nobody = posix_getpwnam('nobody');
        $this->assertIsArray($nobody);
        $cmd = array_map('escapeshellarg', $this->command($this->ini(), ['chat']));
        $out = shell_exec('setpriv --reuid=' . $nobody['uid'] . ' --regid=' . $nobody['gid'] . ' --clear-groups ' . implode(' ', $cmd) . ' 2>&1');
        $answer = json_decode(trim((string) $out), true);
        $this->assertIsArray($answer, (string) $out);
        $this->assertStringContainsString("ModelLoadException: the shared server's directory {$this->dir} ", $answer['error']);
        $this->assertStringContainsString("belongs to user 0, not to this process's user {$nobody['uid']}", $answer['error']);
        // The socket is the user's alone, in a directory only the user enters.
        $this->assertSame(0700, fileperms($this->dir) & 0777);
        $this->assertSame(0600, fileperms($this->dir . '/server.sock') & 0777);
        $this->assertSame(0700, fileperms($this->dir . '/clients') & 0777);
        $this->assertSame(0600, fileperms($this->dir . '/key') & 0777);
    }

    public function testARemovedSocketGetsANewServer(): void
    {
        $proc = proc_open($this->command($this->ini(), ['chat', 'wait', 'chat']), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $first = json_decode((string) fgets($pipes[1]), true);
        $this->assertOk($first);
        $this->assertSame('unix:' . $this->dir . '/server.sock', $first['info']['url']);
        $this->servers[] = $first['info']['server_pid'];
        unlink($this->dir . '/server.sock');
        [, $second] = self::jsonLinesOf($proc, $pipes);
        $this->assertOk($second);
        $this->assertNotSame($first['info']['server_pid'], $second['info']['server_pid']);
        $this->assertTrue($this->waitUntilGone($first['info']['server_pid'], 8), 'the unreachable server was stopped');
        $this->assertSame($first['text'], $second['text']);
    }

    public function testTheExampleRunTwiceAtOnceSharesOneServer(): void
    {
        $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension()];
        foreach ($this->ini() as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        $cmd = array_merge($cmd, [dirname(__DIR__) . '/examples/shared-server.php', self::modelPath()]);
        $procs = [];
        $pipeSets = [];
        for ($i = 0; $i < 2; $i++) {
            $procs[] = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            $pipeSets[] = $pipes;
        }
        $servers = [];
        foreach ($procs as $i => $proc) {
            $out = stream_get_contents($pipeSets[$i][1]);
            $this->assertSame('', stream_get_contents($pipeSets[$i][2]));
            $this->assertSame(0, proc_close($proc), $out);
            $this->assertMatchesRegularExpression('/^pid \d+: shared server pid (\d+) at unix:\S+\/server\.sock \(load \d+ ms\)\n\{"city": "[^"]*"\}\n$/', $out);
            preg_match('/server pid (\d+)/', $out, $m);
            $servers[] = $m[1];
        }
        $this->assertSame($servers[0], $servers[1], 'both used one server');
    }

    public function testAStateDirectoryOthersMayEnterIsRefused(): void
    {
        mkdir($this->dir, 0755);
        chmod($this->dir, 0755);
        [$answer] = $this->steps(['chat']);
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} may be read or written by other users (mode 755); it must be 0700", $answer['error']);
        $this->assertNull($this->record());
    }

    public function testAStateDirectoryThatIsAFileIsRefused(): void
    {
        file_put_contents($this->dir, 'not a directory');
        try {
            [$answer] = $this->steps(['chat']);
        } finally {
            unlink($this->dir);
        }
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} is not a directory", $answer['error']);
    }

    public function testAMissingLlamaServerIsNamed(): void
    {
        [$answer] = $this->steps(['chat'], ['infer.server_binary' => '/nonexistent/llama-server']);
        $this->assertStringStartsWith("Displace\\Infer\\ModelLoadException: the shared server's llama-server /nonexistent/llama-server cannot be run: No such file or directory", $answer['error']);
        $this->assertNull($this->record());
    }

    /**
     * Run the steps with a deadline; a process still running then is killed
     * (a hang fails the test instead of holding the suite).
     *
     * @return array{0: list<array<string, mixed>>, 1: string, 2: bool} the answers, stderr, and whether it finished in time
     */
    private function stepsWithin(float $seconds, array $steps, array $ini = [], ?array $env = null, ?string $path = null): array
    {
        $proc = proc_open($this->command($this->ini($ini), $steps, $path), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        stream_set_blocking($pipes[1], false);
        stream_set_blocking($pipes[2], false);
        [$out, $err] = ['', ''];
        $deadline = microtime(true) + $seconds;
        // Until the process exits (its pipes may stay open in a process it
        // leaked them to: they are read, not waited on), the exit status
        // reported once by the first look after it.
        while (($status = proc_get_status($proc))['running'] && microtime(true) < $deadline) {
            $out .= stream_get_contents($pipes[1]);
            $err .= stream_get_contents($pipes[2]);
            usleep(50000);
        }
        $finished = !$status['running'] && $status['exitcode'] === 0;
        if ($status['running']) {
            proc_terminate($proc, SIGKILL);
        }
        $out .= stream_get_contents($pipes[1]);
        $err .= stream_get_contents($pipes[2]);
        proc_close($proc);
        $lines = array_filter(explode("\n", trim($out)), fn ($l) => $l !== '');
        return [array_map(fn ($l) => json_decode($l, true), array_values($lines)), $err, $finished];
    }

    /** A directory of this test's, removed at the end (test directories that are not the state directory). */
    private function scratch(string $name, int $mode = 0755): string
    {
        $path = $this->base . '-' . $name;
        mkdir($path);
        chmod($path, $mode);
        $this->scratches[] = $path;
        return $path;
    }

    /** @var list<string> */
    private array $scratches = [];

    /** @return list<string> the names of a running process's environment */
    private static function environmentOf(int $pid): array
    {
        $environ = (string) file_get_contents("/proc/$pid/environ");
        return array_values(array_map(fn ($kv) => explode('=', $kv, 2)[0], array_filter(explode("\0", $environ))));
    }

    /** @return list<string> what a running process's descriptors above 2 point to */
    private static function descriptorsOf(int $pid): array
    {
        $targets = [];
        foreach (scandir("/proc/$pid/fd") ?: [] as $fd) {
            if (ctype_digit($fd) && (int) $fd > 2) {
                $targets[] = (string) @readlink("/proc/$pid/fd/$fd");
            }
        }
        return $targets;
    }

    private function asNobody(string $command): void
    {
        if (posix_getuid() !== 0) {
            $this->fail('this test runs as root (as make test does), to act as another user');
        }
        $nobody = posix_getpwnam('nobody');
        exec("setpriv --reuid={$nobody['uid']} --regid={$nobody['gid']} --clear-groups sh -c " . escapeshellarg($command) . ' 2>&1', $out, $status);
        $this->assertSame(0, $status, implode("\n", $out));
    }

    /** A shared object that, loaded into any process, leaves a file behind. */
    private function preloadLibrary(string $marker): string
    {
        $dir = $this->scratch('preload');
        file_put_contents("$dir/mark.c", '#include <stdio.h>
__attribute__((constructor)) static void mark(void) { FILE *f = fopen("' . $marker . '", "a"); if (f) { fputs("loaded\n", f); fclose(f); } }');
        exec('cc -shared -fPIC -o ' . escapeshellarg("$dir/mark.so") . ' ' . escapeshellarg("$dir/mark.c") . ' 2>&1', $out, $status);
        $this->assertSame(0, $status, implode("\n", $out));
        return "$dir/mark.so";
    }

    public function testAScriptsEnvironmentReachesNeitherTheSupervisorNorTheServer(): void
    {
        $real = $this->scratch('tmp');
        $evil = $this->scratch('evil', 0777);
        $marker = $this->scratch('marks') . '/preloaded';
        $so = $this->preloadLibrary($marker);
        // The default state directory: in the TMPDIR PHP started with.
        $ini = $this->ini();
        unset($ini['infer.server_dir']);
        $this->dir = "$real/infer-server-" . posix_geteuid();
        $env = ['TMPDIR' => $real, 'PATH' => (string) getenv('PATH'), 'LANG' => 'C'];
        $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension()];
        foreach ($ini as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        $cmd = array_merge($cmd, [__DIR__ . '/support/shared-steps.php', self::modelPath(), "putenv:$so:$evil", 'chat', 'wait', 'wait']);
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        fgets($pipes[1]);
        $chat = json_decode((string) fgets($pipes[1]), true);
        $this->assertOk($chat);
        $record = $this->record();
        $this->assertNotNull($record, "the state directory is in the TMPDIR PHP started with ($real), not the script's");
        foreach (['supervisor', 'server'] as $who) {
            $names = self::environmentOf($record[$who]);
            $this->assertSame([], array_values(array_diff($names, ['PATH', 'LANG', 'LC_ALL', 'TZ', 'CUDA_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES', 'GGML_VK_VISIBLE_DEVICES'])), "$who: " . implode(' ', $names));
            $this->assertContains('PATH', $names, "$who keeps what PHP started with");
        }
        self::jsonLinesOf($proc, $pipes);
        $this->assertFileDoesNotExist($marker, 'the library a script preloaded never ran');
        $this->assertSame(['.', '..'], scandir($evil), "nothing was created in the script's TMPDIR");
        $this->assertSame($chat['info']['server_pid'], $record['server']);
    }

    public function testDescriptorsOpenAtTheStartAreNotInheritedBySupervisorOrServer(): void
    {
        $proc = proc_open($this->command($this->ini(), ['hold-fds', 'chat', 'wait', 'wait']), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $held = json_decode((string) fgets($pipes[1]), true)['held'];
        $this->assertOk(json_decode((string) fgets($pipes[1]), true));
        $this->assertCount(2, $held, 'a file and a socket were open in PHP at the start');
        $this->assertCount(1, preg_grep('/^socket:\[\d+\]$/', $held));
        $record = $this->record();
        $this->assertNotNull($record);
        foreach (['supervisor', 'server'] as $who) {
            $theirs = self::descriptorsOf($record[$who]);
            $this->assertNotSame([], $theirs, "$who's descriptors can be read");
            $this->assertSame([], array_values(array_intersect($held, $theirs)), "$who: " . implode(' ', $theirs));
            $stat = (string) file_get_contents('/proc/' . $record[$who] . '/stat');
            $fields = explode(' ', substr($stat, strrpos($stat, ')') + 2));
            $this->assertNotSame((string) getmypid(), $fields[2], "$who is not in the test's process group");
        }
        self::jsonLinesOf($proc, $pipes);
    }

    public function testATcpPortIsRefusedAndASquatterOnItGetsNothing(): void
    {
        $squatter = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int) substr((string) stream_socket_get_name($squatter, false), strlen('127.0.0.1:'));
        [[$answer], $stderr, $finished] = $this->stepsWithin(60, ['chat'], ['infer.server_port' => (string) $port]);
        $this->assertTrue($finished);
        $why = "php.ini infer.server_port = \"$port\" is refused: the shared server listens only on the Unix socket in its state directory (a TCP port on 127.0.0.1 can be taken first by another local user, who would then get the key and every prompt); remove the setting";
        $this->assertSame("Displace\\Infer\\ModelLoadException: $why", $answer['error']);
        $this->assertStringContainsString("PHP Warning:  PHP Startup: infer: $why; the shared server stays off", $stderr);
        stream_set_blocking($squatter, false);
        $this->assertFalse(@stream_socket_accept($squatter, 0), 'nothing connected to the squatter');
        $this->assertNull($this->record(), 'no server was started');
    }

    public function testUnrelatedProcessesARecordNamesAreNeverSignalledAndTheServerStarts(): void
    {
        $sleeper = proc_open(['sleep', '120'], [], $pipes);
        $pid = proc_get_status($sleeper)['pid'];
        try {
            $tag = implode('|', [self::modelPath(), self::SLOTS, self::THREADS, self::CTX, LlamaServer::binary(), 0]);
            $stat = (string) file_get_contents("/proc/$pid/stat");
            $start = (int) explode(' ', substr($stat, strrpos($stat, ')') + 2))[19];
            $boot = trim((string) file_get_contents('/proc/sys/kernel/random/boot_id'));
            $records = [
                'bare pids (the layout before start times)' => ['supervisor' => $pid, 'server' => $pid, 'port' => 0, 'tag' => $tag],
                'the pid of another process than the one started' => ['supervisor' => ['pid' => $pid, 'start' => $start + 1], 'server' => ['pid' => $pid, 'start' => $start + 1], 'boot' => $boot, 'tag' => $tag],
                'a process of another boot' => ['supervisor' => ['pid' => $pid, 'start' => $start], 'server' => ['pid' => $pid, 'start' => $start], 'boot' => 'another-boot', 'tag' => $tag],
            ];
            foreach ($records as $what => $record) {
                @mkdir($this->dir, 0700);
                file_put_contents("{$this->dir}/server.json", json_encode($record));
                chmod("{$this->dir}/server.json", 0600);
                [$answer] = $this->steps(['chat']);
                $this->assertOk($answer);
                $this->assertNotSame($pid, $answer['info']['server_pid'], $what);
                $this->assertTrue(self::alive($pid) && proc_get_status($sleeper)['running'], "$what: the unrelated process was not signalled");
                $this->servers[] = $answer['info']['server_pid'];
                $this->waitUntilGone($answer['info']['server_pid'], 8);
            }
        } finally {
            proc_terminate($sleeper, SIGKILL);
            proc_close($sleeper);
        }
    }

    public function testAClientsPidTakenByAnotherProcessDoesNotKeepTheServerAlive(): void
    {
        $sleeper = proc_open(['sleep', '120'], [], $pipes);
        $pid = proc_get_status($sleeper)['pid'];
        try {
            // A client that exited, whose pid the sleeper has now.
            mkdir($this->dir, 0700);
            mkdir("{$this->dir}/clients", 0700);
            file_put_contents("{$this->dir}/clients/$pid", '1');
            chmod("{$this->dir}/clients/$pid", 0600);
            [$answer] = $this->steps(['chat']);
            $this->assertOk($answer);
            $this->assertTrue($this->waitUntilGone($answer['info']['server_pid'], 10), 'the server stops once its real clients are gone');
            $this->assertTrue(proc_get_status($sleeper)['running']);
            $this->assertStringContainsString('infer-serve: stopping llama-server: no client process is left', (string) file_get_contents("{$this->dir}/server.log"));
        } finally {
            proc_terminate($sleeper, SIGKILL);
            proc_close($sleeper);
        }
    }

    public function testASocketThatRefusesConnectionsGetsANewServer(): void
    {
        $proc = proc_open($this->command($this->ini(), ['chat', 'wait', 'chat']), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $first = json_decode((string) fgets($pipes[1]), true);
        $this->assertOk($first);
        $this->servers[] = $first['info']['server_pid'];
        // The socket replaced by one nobody listens on.
        $socket = "{$this->dir}/server.sock";
        unlink($socket);
        fclose(stream_socket_server("unix://$socket"));
        $this->assertFileExists($socket);
        [, $second] = self::jsonLinesOf($proc, $pipes);
        $this->assertOk($second);
        $this->assertNotSame($first['info']['server_pid'], $second['info']['server_pid']);
        $this->assertTrue($this->waitUntilGone($first['info']['server_pid'], 8), 'the server that no longer answered was stopped');
        $this->assertSame($first['text'], $second['text']);
    }

    public function testAFifoInPlaceOfTheRecordDoesNotHangALoad(): void
    {
        mkdir($this->dir, 0700);
        posix_mkfifo("{$this->dir}/server.json", 0600);
        [[$answer], $stderr, $finished] = $this->stepsWithin(90, ['chat']);
        $this->assertTrue($finished, 'the load finished');
        $this->assertSame('', $stderr);
        $this->assertOk($answer);
        $this->assertNotNull($this->record(), 'the supervisor wrote its record in place of the FIFO');
    }

    public function testAHeldLockFailsTheLoadAfterABoundedWaitNamingTheSetting(): void
    {
        mkdir($this->dir, 0700);
        $lock = fopen("{$this->dir}/lock", 'c');
        chmod("{$this->dir}/lock", 0600);
        $this->assertTrue(flock($lock, LOCK_EX));
        $begin = microtime(true);
        [[$answer], , $finished] = $this->stepsWithin(60, ['chat'], ['infer.server_start_timeout' => '1']);
        $this->assertTrue($finished);
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} is locked by another process for over 11 s (php.ini infer.server_start_timeout, plus 10 s)", $answer['error']);
        $this->assertGreaterThanOrEqual(11, microtime(true) - $begin);
        fclose($lock);
    }

    public function testAStateDirectoryAnotherUserCreatedFirstIsNeverAdopted(): void
    {
        $base = $this->scratch('sticky', 01777);
        $this->dir = "$base/state";
        $this->asNobody('mkdir -m 0700 ' . escapeshellarg($this->dir));
        [$answer] = $this->steps(['chat']);
        $nobody = posix_getpwnam('nobody')['uid'];
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} belongs to user $nobody, not to this process's user 0", $answer['error']);
    }

    public function testAParentAnotherUserOwnsOrMayWriteToIsRefused(): void
    {
        $base = $this->scratch('sticky', 01777);
        // Another user's directory on the way: it could rename ours away.
        $this->asNobody('mkdir -m 0755 ' . escapeshellarg("$base/theirs"));
        $this->dir = "$base/theirs/state";
        [$answer] = $this->steps(['chat']);
        $nobody = posix_getpwnam('nobody')['uid'];
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} is inside $base/theirs, which belongs to user $nobody (neither root nor this process's user), who could move it away", $answer['error']);
        $this->assertDirectoryDoesNotExist($this->dir, 'nothing was created there');
        // A directory anyone may write to, without the sticky bit.
        $open = $this->scratch('open', 0777);
        $this->dir = "$open/state";
        [$answer] = $this->steps(['chat']);
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} is inside $open, which other users can write to without the sticky bit (mode 777): they could move it away", $answer['error']);
        $this->assertDirectoryDoesNotExist($this->dir);
    }

    public function testALinkPlantedInPlaceOfTheStateDirectoryIsNotFollowed(): void
    {
        $base = $this->scratch('sticky', 01777);
        $target = $this->scratch('target', 0700);
        $this->dir = "$base/state";
        $this->asNobody('ln -s ' . escapeshellarg($target) . ' ' . escapeshellarg($this->dir));
        [$answer] = $this->steps(['chat']);
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} passes through the symbolic link {$this->dir}; give the directory's real path", $answer['error']);
        $this->assertSame(['.', '..'], scandir($target), 'nothing written where the link points');
    }

    public function testWhatTheStateDirectoryHoldsInPlaceOfItsFilesIsNamed(): void
    {
        // A directory where the lock should be; a file where clients/ should be.
        mkdir($this->dir, 0700);
        mkdir("{$this->dir}/lock", 0700);
        [$answer] = $this->steps(['chat']);
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} cannot hold its lock: Is a directory (os error 21)", $answer['error']);
        rmdir("{$this->dir}/lock");
        rmdir("{$this->dir}/clients");
        file_put_contents("{$this->dir}/clients", 'x');
        [$answer] = $this->steps(['chat']);
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} cannot hold clients/: is not a directory ({$this->dir}/clients)", $answer['error']);
        $this->assertNull($this->record());
    }

    public function testAKeyThatIsNoLongerAFileIsNamed(): void
    {
        $proc = proc_open($this->command($this->ini(), ['chat', 'wait', 'chat']), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $first = json_decode((string) fgets($pipes[1]), true);
        $this->assertOk($first);
        $this->servers[] = $first['info']['server_pid'];
        // The later load of the same process reads the key again.
        unlink("{$this->dir}/key");
        posix_mkfifo("{$this->dir}/key", 0600);
        [, $second] = self::jsonLinesOf($proc, $pipes);
        $this->assertSame("Displace\\Infer\\ModelLoadException: the shared server's directory {$this->dir} has no readable key: key is not a regular file", $second['error']);
    }
}
