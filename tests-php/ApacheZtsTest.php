<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\{Model, Prompt};
use Displace\Infer\Tests\Support\{Apache, LlamaServer};

require_once __DIR__ . '/support/Apache.php';
require_once __DIR__ . '/support/EmbeddingModel.php';
require_once __DIR__ . '/support/LlamaServer.php';

/**
 * Thread-safe PHP for real: Apache's event MPM with the ZTS PHP 8.3 module
 * (scripts/apache-zts.sh), one child process whose threads each serve a PHP
 * request, driven with real HTTP requests, many at once. Runs in
 * `make test PHP=8.3-zts` (the group is excluded elsewhere: it needs the
 * thread-safe PHP and its Apache module).
 *
 * @group apache
 */
final class ApacheZtsTest extends InferTestCase
{
    private const PROMPTS = ['Hello', 'What is 2+2?', 'Name a colour.', 'Say yes.'];

    private ?Apache $apache = null;

    protected function setUp(): void
    {
        $this->assertSame(1, PHP_ZTS, 'the Apache tests run on the thread-safe PHP: make test PHP=8.3-zts');
    }

    protected function tearDown(): void
    {
        if ($this->apache !== null) {
            $log = $this->apache->errorLog();
            $this->apache->stop();
            $this->apache = null;
            // A crashed thread takes its process down: Apache logs the signal.
            $this->assertDoesNotMatchRegularExpression('/exit signal|Segmentation fault|AH00052|Aborted/', $log, "Apache's error log:\n$log");
        }
    }

    private function start(int $threads, array $ini = []): Apache
    {
        return $this->apache = new Apache($threads, $ini);
    }

    /** What the CLI answers, greedy, with the options apache-worker.php uses. */
    private static function cliAnswer(string $q, int $max = 8): string
    {
        static $model = null;
        $model ??= Model::load(self::modelPath(), ['n_threads' => 1]);
        return $model->chat(Prompt::user($q), maxTokens: $max, nCtx: 256)->text();
    }

    /**
     * The mappings of the model file in $pid (/proc/PID/maps): one per
     * copy of the weights in memory (llama.cpp maps the file once per load).
     */
    private static function modelMappings(int $pid): int
    {
        $path = (string) realpath(self::modelPath());
        $mappings = 0;
        foreach (file("/proc/$pid/maps", FILE_IGNORE_NEW_LINES) ?: [] as $line) {
            $fields = preg_split('/\s+/', $line, 6);
            if (($fields[5] ?? '') === $path) {
                $mappings++;
            }
        }
        return $mappings;
    }

    public function testThreadsOfOneProcessShareOnePersistentModelAndAnswerAsTheCliDoes(): void
    {
        $expected = array_map(fn ($q) => self::cliAnswer($q), self::PROMPTS);

        $one = $this->start(1);
        $answer = $one->get(['case' => 'chat', 'q' => self::PROMPTS[0]]);
        $this->assertSame($expected[0], $answer['json']['result'] ?? null, $answer['body']);
        $child = $answer['json']['pid'];
        $rssOne = Apache::rss($child);
        $this->assertSame(1, self::modelMappings($child), 'the model is mapped once');
        $this->tearDown();

        $apache = $this->start(16);
        $queries = [];
        for ($i = 0; $i < 32; $i++) {
            $queries[] = ['case' => 'chat', 'id' => (string) $i, 'q' => self::PROMPTS[$i % 4]];
        }
        $answers = $apache->getMany($queries);
        $pids = [];
        $threads = [];
        foreach ($answers as $i => $answer) {
            $this->assertSame(200, $answer['status'], "request $i: {$answer['body']}");
            $this->assertSame($expected[$i % 4], $answer['json']['result'] ?? null, "request $i: {$answer['body']}");
            $pids[$answer['json']['pid']] = true;
            $threads[$answer['json']['thread']] = true;
        }
        $this->assertCount(1, $pids, 'one child process served every request');
        $this->assertGreaterThan(1, count($threads), 'several threads served them');
        $child = (int) array_key_first($pids);
        $this->assertGreaterThanOrEqual(16, Apache::threadCount($child));
        // One copy of the weights for every thread: one mapping of the file,
        // and the child's memory grew by less than a second copy would take.
        $this->assertSame(1, self::modelMappings($child), 'the model is mapped once for 16 threads');
        $rssMany = Apache::rss($child);
        $size = intdiv((int) filesize(self::modelPath()), 1024);
        fwrite(STDERR, sprintf("\n[apache] child RSS: %d MiB with 1 thread, %d MiB with 16 (model file %d MiB)\n", $rssOne >> 10, $rssMany >> 10, $size >> 10));
    }

    public function testATimeLimitOrATimeoutStopsOnlyItsOwnRequest(): void
    {
        $apache = $this->start(8);
        $queries = [
            ['case' => 'long', 'id' => 'limit', 'limit' => 1],
            ['case' => 'long', 'id' => 'timeout', 'timeout' => 1.0, 'limit' => 0],
        ];
        foreach (self::PROMPTS as $i => $q) {
            $queries[] = ['case' => 'chat', 'id' => "chat$i", 'q' => $q, 'max' => 24];
        }
        $answers = $apache->getMany($queries);
        // The time limit ends its request with PHP's fatal error...
        $this->assertNull($answers[0]['json'], 'the request past its time limit ended without a result: ' . $answers[0]['body']);
        $this->assertStringContainsString('Maximum execution time of 1 second exceeded', $apache->errorLog());
        // ... the `timeout` option ends its generation, reported as such ...
        $this->assertSame('timeout', $answers[1]['json']['result'] ?? null, $answers[1]['body']);
        // ... and the requests beside them finish as the CLI's.
        foreach (self::PROMPTS as $i => $q) {
            $this->assertSame(self::cliAnswer($q, 24), $answers[$i + 2]['json']['result'] ?? null, $answers[$i + 2]['body']);
        }
        // The thread that hit its limit serves again.
        $again = $apache->getMany(array_fill(0, 8, ['case' => 'chat', 'q' => self::PROMPTS[0]]));
        foreach ($again as $answer) {
            $this->assertSame(self::cliAnswer(self::PROMPTS[0]), $answer['json']['result'] ?? null, $answer['body']);
        }
    }

    public function testAStreamReachesItsClientPieceByPieceWhileOthersGenerate(): void
    {
        $apache = $this->start(4);
        $queries = [['case' => 'stream', 'q' => 'Tell me a story about a cat.', 'max' => 48]];
        foreach (array_slice(self::PROMPTS, 0, 3) as $q) {
            $queries[] = ['case' => 'chat', 'q' => $q, 'max' => 32];
        }
        $answers = $apache->getMany($queries);
        $lines = array_values(array_filter(explode("\n", $answers[0]['body'])));
        $this->assertGreaterThan(10, count($lines), $answers[0]['body']);
        $pieces = array_map(fn ($l) => json_decode($l, true), $lines);
        $last = end($pieces);
        // The client had the first piece before the server wrote the last.
        $this->assertLessThan($last['t'], $answers[0]['first'], 'the first piece arrived before the stream ended');
        $local = Model::load(self::modelPath(), ['n_threads' => 1])
            ->chat(Prompt::user('Tell me a story about a cat.'), maxTokens: 48, nCtx: 256)->text();
        $this->assertSame($local, implode('', array_column($pieces, 'piece')));
        foreach (array_slice(self::PROMPTS, 0, 3) as $i => $q) {
            $this->assertSame(self::cliAnswer($q, 32), $answers[$i + 1]['json']['result'] ?? null, $answers[$i + 1]['body']);
        }
    }

    public function testAnExceptionInOneRequestLeavesTheOthersUntouched(): void
    {
        $apache = $this->start(4);
        $queries = [['case' => 'bad-schema']];
        foreach (array_slice(self::PROMPTS, 0, 3) as $q) {
            $queries[] = ['case' => 'chat', 'q' => $q];
        }
        $answers = $apache->getMany($queries);
        $this->assertStringStartsWith('Displace\\Infer\\', (string) ($answers[0]['json']['error'] ?? ''), $answers[0]['body']);
        $this->assertStringContainsString('pattern', (string) ($answers[0]['json']['error'] ?? ''));
        foreach (array_slice(self::PROMPTS, 0, 3) as $i => $q) {
            $this->assertSame(self::cliAnswer($q), $answers[$i + 1]['json']['result'] ?? null, $answers[$i + 1]['body']);
        }
    }

    /**
     * Sixteen greedy requests at once of one prompt, over eight threads of one
     * process with a persistent model and the prompt cache on: each reply is
     * the CLI's. Those that find the prompt in the cache restore another
     * context's state; before the cache kept the logits of the evaluation
     * that made a state, they evaluated the last token again alone and
     * replied otherwise (0 of 16 equal to the CLI's).
     */
    public function testConcurrentGreedyRequestsFromTheCacheAnswerAsTheCliDoes(): void
    {
        $q = 'List the colours of the rainbow and say one thing about each colour, in a numbered list. Keep each line short and simple, and start with red, which is the first colour of the rainbow.';
        // The replies part at their second token: 12 show it.
        $expected = self::cliAnswer($q, 12);
        $apache = $this->start(8);
        // The first request puts the prompt in the process's cache.
        $first = $apache->get(['case' => 'chat-cached', 'q' => $q, 'max' => '12']);
        $this->assertSame($expected, $first['json']['result']['text'] ?? null, $first['body']);
        $answers = $apache->getMany(array_fill(0, 16, ['case' => 'chat-cached', 'q' => $q, 'max' => '12']));
        $whole = 0;
        foreach ($answers as $i => $answer) {
            $this->assertSame(200, $answer['status'], "request $i: {$answer['body']}");
            $result = $answer['json']['result'] ?? [];
            $this->assertSame($expected, $result['text'] ?? null, "request $i: {$answer['body']}");
            $whole += (int) (($result['cached'] ?? 0) === ($result['prompt'] ?? -1));
        }
        $this->assertGreaterThan(0, $whole, 'some requests found the prompt whole in the cache');
    }

    /**
     * open_basedir on a threaded server: a request confined to a directory
     * calls chdir() into it and opens a relative path. Its working directory
     * is virtual (the process's stays /, where a file of the same name waits);
     * the extension must open the jail's file, the one PHP checked.
     */
    public function testARelativePathAfterChdirIsTheRequestsDirectorysFile(): void
    {
        require_once __DIR__ . '/support/images.php';
        $jail = sys_get_temp_dir() . '/infer-apache-jail-' . getmypid();
        @mkdir($jail);
        $name = 'infer-apache-jail-' . getmypid() . '.png';
        file_put_contents("$jail/$name", Support\png(2, 2, Support\solid(2, 2, 255, 0, 0)));
        file_put_contents("/$name", Support\png(3, 3, Support\solid(3, 3, 0, 0, 255)));
        try {
            $apache = $this->start(4, ['open_basedir' => $jail . PATH_SEPARATOR . __DIR__]);
            $answers = $apache->getMany(array_fill(0, 4, ['case' => 'jail', 'dir' => $jail, 'file' => $name]));
            foreach ($answers as $i => $answer) {
                $this->assertSame('2x2', $answer['json']['result'] ?? null, "request $i: the jail's image, not the 3x3 one of the process's directory: {$answer['body']}");
            }
        } finally {
            @unlink("$jail/$name");
            @unlink("/$name");
            @rmdir($jail);
        }
    }

    public function testThePromptCacheChatManyAndEmbeddingsServeFromThreads(): void
    {
        $apache = $this->start(4);
        $first = $apache->get(['case' => 'cached', 'q' => 'Hello']);
        $second = $apache->get(['case' => 'cached', 'q' => 'Hi']);
        $this->assertSame(0, $first['json']['result']['cached'] ?? null, $first['body']);
        $this->assertGreaterThan(100, $second['json']['result']['cached'] ?? 0, 'the second request starts from the cached system prompt: ' . $second['body']);

        $answers = $apache->getMany([['case' => 'many', 'q' => 'Hello'], ['case' => 'embed'], ['case' => 'many', 'q' => 'Hello'], ['case' => 'embed']]);
        $local = Model::load(self::modelPath(), ['n_threads' => 1]);
        $many = array_map(fn ($r) => $r->text(), $local->chatMany([Prompt::user('Hello'), Prompt::user('Say no.'), Prompt::user('Hello')], maxTokens: 8, nCtx: 256));
        $vector = Model::load(EmbeddingModel::path(), ['embedding' => true, 'n_threads' => 1])->embed('The cat sat on the mat.')->vector();
        foreach ([0, 2] as $i) {
            $this->assertSame($many, $answers[$i]['json']['result'] ?? null, $answers[$i]['body']);
        }
        foreach ([1, 3] as $i) {
            $got = $answers[$i]['json']['result'] ?? [];
            $this->assertCount(count($vector), $got, $answers[$i]['body']);
            foreach ($vector as $k => $v) {
                $this->assertEqualsWithDelta($v, $got[$k], 1e-4, "component $k");
            }
        }
    }

    public function testTheSharedServerServesEveryThread(): void
    {
        $dir = sys_get_temp_dir() . '/infer-apache-shared-' . getmypid();
        @mkdir($dir, 0700);
        @chown($dir, 'www-data');
        $apache = $this->start(4, [
            'infer.server_model' => self::modelPath(),
            'infer.server_binary' => LlamaServer::binary(),
            'infer.server_dir' => $dir,
            'infer.server_slots' => '2',
            'infer.server_ctx' => '1024',
            'infer.server_threads' => '1',
        ]);
        try {
            $answers = $apache->getMany(array_map(fn ($q) => ['case' => 'shared', 'q' => $q, 'max' => 6], self::PROMPTS), 180.0);
            foreach ($answers as $i => $answer) {
                $this->assertIsString($answer['json']['result'] ?? null, "request $i: {$answer['body']}\n" . $apache->errorLog());
                $this->assertNotSame('', $answer['json']['result']);
            }
            $record = json_decode((string) @file_get_contents("$dir/server.json"), true);
            $this->assertIsArray($record, 'one server was started for the threads');
        } finally {
            $record = json_decode((string) @file_get_contents("$dir/server.json"), true);
            if (is_array($record) && isset($record['supervisor']['pid'])) {
                posix_kill((int) $record['supervisor']['pid'], SIGTERM);
            }
        }
    }

    public function testAGracefulRestartWhileRequestsRunCrashesNothing(): void
    {
        $apache = $this->start(8);
        $warm = $apache->get(['case' => 'chat']);
        $oldChild = (int) ($warm['json']['pid'] ?? 0);
        $this->assertGreaterThan(0, $oldChild, $warm['body']);
        // Eight requests in flight, then the restart.
        $pid = pcntl_fork();
        if ($pid === 0) {
            usleep(300000);
            $apache->graceful();
            exit(0);
        }
        $answers = $apache->getMany(array_map(fn ($i) => ['case' => 'chat', 'q' => self::PROMPTS[$i % 4], 'max' => 32], range(0, 7)));
        pcntl_waitpid($pid, $status);
        foreach ($answers as $i => $answer) {
            $this->assertSame(self::cliAnswer(self::PROMPTS[$i % 4], 32), $answer['json']['result'] ?? null, "request $i: {$answer['body']}");
        }
        // The old child finishes its requests and exits, its models with it.
        $deadline = microtime(true) + 30;
        while (file_exists("/proc/$oldChild") && microtime(true) < $deadline) {
            usleep(100000);
        }
        $this->assertFileDoesNotExist("/proc/$oldChild", 'the old child exited after the graceful restart');
        // The new child answers (retried while it starts).
        $deadline = microtime(true) + 30;
        do {
            try {
                $after = $apache->get(['case' => 'chat']);
            } catch (\RuntimeException $e) {
                $after = ['json' => null, 'body' => $e->getMessage()];
                usleep(200000);
            }
        } while (!isset($after['json']['pid']) && microtime(true) < $deadline);
        $this->assertNotSame($oldChild, $after['json']['pid'] ?? null, 'a new child serves');
        $this->assertSame(self::cliAnswer(self::PROMPTS[0]), $after['json']['result'] ?? null, $after['body']);
    }

    public function testAThousandRequestsOverSixteenThreadsKeepMemorySteady(): void
    {
        $apache = $this->start(16);
        $expected = self::cliAnswer('Hi', 2);
        $rss = [];
        for ($wave = 0; $wave < 63; $wave++) {
            $answers = $apache->getMany(array_fill(0, 16, ['case' => 'chat', 'q' => 'Hi', 'max' => 2]));
            foreach ($answers as $i => $answer) {
                $this->assertSame($expected, $answer['json']['result'] ?? null, "wave $wave, request $i: {$answer['body']}");
            }
            $rss[$wave] = Apache::rss((int) $answers[0]['json']['pid']);
        }
        // After the first waves have filled the caches, memory stays put.
        $growth = $rss[62] - $rss[15];
        fwrite(STDERR, sprintf("\n[apache] 1,008 requests: child RSS %d MiB after 256, %d MiB after 1,008\n", $rss[15] >> 10, $rss[62] >> 10));
        $this->assertLessThan(32 * 1024, $growth, 'the child grew by ' . ($growth >> 10) . ' MiB over 752 requests');
    }

    /**
     * llama.cpp's messages while a load fails go to the error of the request
     * whose load it was: two files cut at different places, loaded by
     * threads at once, each error names its own file and its own tensor.
     */
    public function testEachRequestGetsItsOwnDiagnostics(): void
    {
        $dir = sys_get_temp_dir() . '/infer-apache-diag-' . getmypid();
        @mkdir($dir, 0755);
        $bytes = (string) file_get_contents(self::modelPath());
        $files = ["$dir/early.gguf" => 5_000_000, "$dir/late.gguf" => 60_000_000];
        foreach ($files as $file => $length) {
            file_put_contents($file, substr($bytes, 0, $length));
            chmod($file, 0644);
        }
        unset($bytes);
        // What each file's load says on its own, in this process.
        $alone = [];
        foreach (array_keys($files) as $file) {
            try {
                Model::load($file);
                $this->fail("$file loaded");
            } catch (\Displace\Infer\ModelLoadException $e) {
                $alone[$file] = $e->getMessage();
            }
        }
        $this->assertNotSame($alone["$dir/early.gguf"], str_replace('late', 'early', $alone["$dir/late.gguf"]), 'the two files fail differently');
        $apache = $this->start(8);
        $queries = [];
        for ($i = 0; $i < 16; $i++) {
            $queries[] = $i % 4 === 3
                ? ['case' => 'chat', 'q' => 'Hello']
                : ['case' => 'bad-load', 'file' => array_keys($files)[$i % 2]];
        }
        try {
            $answers = $apache->getMany($queries);
        } finally {
            array_map('unlink', array_keys($files));
            @rmdir($dir);
        }
        foreach ($queries as $i => $query) {
            if ($query['case'] === 'chat') {
                $this->assertSame(self::cliAnswer('Hello'), $answers[$i]['json']['result'] ?? null, $answers[$i]['body']);
                continue;
            }
            $this->assertSame('Displace\\Infer\\ModelLoadException: ' . $alone[$query['file']], $answers[$i]['json']['error'] ?? null, "request $i");
        }
    }

    /**
     * The thread budget (the cores shared by processes and threads, one
     * flock()ed slot file each in /dev/shm/infer-UID) is given back by every
     * request: by those that end normally and by those that PHP's time limit
     * ends in the middle of a generation.
     */
    public function testEveryRequestGivesBackItsShareOfTheCores(): void
    {
        $uid = posix_getuid() === 0 ? (int) (posix_getpwnam('www-data')['uid'] ?? -1) : posix_getuid();
        $registry = self::slotRegistry($uid);
        $held = fn (): int => self::heldSlots($registry);
        $apache = $this->start(4);
        $answers = $apache->getMany([
            ['case' => 'long', 'threads' => 'auto', 'limit' => 1],
            ['case' => 'chat', 'threads' => 'auto', 'q' => 'Hello', 'max' => 8, 'limit' => 120],
            ['case' => 'long', 'threads' => 'auto', 'limit' => 1],
            ['case' => 'chat', 'threads' => 'auto', 'q' => 'Say yes.', 'max' => 8, 'limit' => 120],
        ]);
        $this->assertNull($answers[0]['json'], 'ended by its time limit: ' . $answers[0]['body']);
        $this->assertIsString($answers[1]['json']['result'] ?? null, $answers[1]['body']);
        $this->assertDirectoryExists($registry, 'the requests shared the cores through the budget');
        $this->assertNotEmpty(glob("$registry/slot-*"));
        $deadline = microtime(true) + 2;
        while ($held() > 0 && microtime(true) < $deadline) {
            usleep(50000);
        }
        $this->assertSame(0, $held(), 'no slot is held once every request has ended');
        // And the next requests get the cores again.
        $again = $apache->getMany(array_fill(0, 4, ['case' => 'chat', 'threads' => 'auto', 'q' => 'Hello', 'max' => 8, 'limit' => 120]));
        foreach ($again as $answer) {
            $this->assertIsString($answer['json']['result'] ?? null, $answer['body']);
        }
    }

    public function testNothingOfOneRequestReachesAnotherThread(): void
    {
        $apache = $this->start(4);
        // A deadline, a thread count and an error of one request, beside
        // requests without them.
        $answers = $apache->getMany([
            ['case' => 'long', 'timeout' => 0.5, 'limit' => 0],
            ['case' => 'chat', 'q' => 'Hello', 'max' => 32],
            ['case' => 'bad-schema'],
            ['case' => 'chat', 'q' => 'Say yes.', 'max' => 32],
        ]);
        $this->assertSame('timeout', $answers[0]['json']['result'] ?? null, $answers[0]['body']);
        $this->assertSame(self::cliAnswer('Hello', 32), $answers[1]['json']['result'] ?? null, $answers[1]['body']);
        $this->assertArrayHasKey('error', $answers[2]['json'] ?? []);
        $this->assertSame(self::cliAnswer('Say yes.', 32), $answers[3]['json']['result'] ?? null, $answers[3]['body']);
        // The next requests on the same threads start clean: no deadline, no error.
        $again = $apache->getMany(array_fill(0, 4, ['case' => 'chat', 'q' => 'Hello', 'max' => 32]));
        foreach ($again as $answer) {
            $this->assertArrayNotHasKey('error', $answer['json'] ?? [], $answer['body']);
            $this->assertSame(self::cliAnswer('Hello', 32), $answer['json']['result'] ?? null, $answer['body']);
        }
    }
}
