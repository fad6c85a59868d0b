<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

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
    /** @var list<int> servers to stop at the end, whatever happened */
    private array $servers = [];

    protected function setUp(): void
    {
        parent::setUp();
        self::requireExtension('posix');
        $this->dir = sys_get_temp_dir() . '/infer-shared-test-' . getmypid() . '-' . bin2hex(random_bytes(4));
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
        if ($this->dir !== '' && is_dir($this->dir)) {
            exec('rm -rf ' . escapeshellarg($this->dir));
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
        $proc = proc_open($this->command($this->ini($ini), $steps, $path), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        return self::jsonLinesOf($proc, $pipes);
    }

    /** @return array{supervisor: int, server: int, port: int}|null */
    private function record(): ?array
    {
        $text = @file_get_contents($this->dir . '/server.json');
        $record = $text === false ? null : json_decode($text, true);
        return is_array($record) ? $record : null;
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
        $this->assertSame(0600, fileperms($this->dir . '/key') & 0777);
    }

    public function testOnATcpPortTheServerAnswersNobodyWithoutTheKey(): void
    {
        $port = Support\free_port();
        $first = $this->steps(['chat'], ['infer.server_port' => (string) $port])[0];
        $this->assertOk($first);
        $this->assertSame("http://127.0.0.1:$port", $first['info']['url']);
        $this->assertFileDoesNotExist($this->dir . '/server.sock');
        // The process has gone: the server waits out its grace time.
        $body = @file_get_contents("http://127.0.0.1:$port/v1/models", false, stream_context_create(['http' => ['ignore_errors' => true]]));
        $this->assertStringContainsString('401', $http_response_header[0] ?? '(no answer)', (string) $body);
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
}
