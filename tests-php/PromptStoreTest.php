<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Tests\Support\Fpm;

use function Displace\Infer\Tests\Support\fcgi_read;
use function Displace\Infer\Tests\Support\fcgi_send;

require_once __DIR__ . '/support/Fpm.php';
require_once __DIR__ . '/support/prompt-cache-prompts.php';

/**
 * The prompt store shared by the processes of a machine
 * (`infer.prompt_cache_dir`): a process starts from the prefixes another
 * stored, for the same model file, build and KV layout only; a bad entry
 * never changes an answer, never crashes and never writes to stderr.
 *
 * What it checks is the engine's, the same on every PHP: CI's quick runs on the other PHPs leave it out.
 *
 * @group engine
 */
final class PromptStoreTest extends InferTestCase
{
    private string $store = '';

    protected function setUp(): void
    {
        parent::setUp();
        $this->store = sys_get_temp_dir() . '/infer-store-test-' . getmypid() . '-' . bin2hex(random_bytes(4));
    }

    protected function tearDown(): void
    {
        if (is_dir($this->store)) {
            chmod($this->store, 0700);
            exec('rm -rf ' . escapeshellarg($this->store));
        }
        parent::tearDown();
    }

    /** The command that runs one step process; $wrap goes before it (a shell, setpriv, …). */
    private function command(array $job, array $wrap = [], array $flags = []): array
    {
        $job += ['model' => self::modelPath()];
        return [...$wrap, PHP_BINARY, ...$flags, '-d', 'extension=' . DefaultModel::extension(),
            '-d', "infer.prompt_cache_dir={$this->store}", '-d', 'infer.prompt_cache_dir_min_tokens=32',
            __DIR__ . '/support/prompt-store-steps.php', json_encode($job)];
    }

    /**
     * Run one process; nothing may reach its stderr.
     *
     * @return array{0: list<array{text: string, cached: int, prompt: int, cache: string}>, 1: array<string, int|string>}
     */
    private function runSteps(array $job, array $wrap = [], array $flags = []): array
    {
        return self::finish($this->start($job, $wrap, $flags));
    }

    /** @return array{resource, array} */
    private function start(array $job, array $wrap = [], array $flags = []): array
    {
        $proc = proc_open($this->command($job, $wrap, $flags), [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        return [$proc, $pipes];
    }

    private static function finish(array $started): array
    {
        [$proc, $pipes] = $started;
        $lines = self::jsonLinesOf($proc, $pipes);
        $stats = array_pop($lines);
        return [$lines, $stats];
    }

    /** Tokens of system prompt $n on its own. */
    private static function systemTokens(int $n): int
    {
        return self::model()->countTokens(prompt_cache_system($n));
    }

    /** @return list<string> the store's entries */
    private function entries(): array
    {
        return glob("{$this->store}/*.kv") ?: [];
    }

    private function onlyEntry(): string
    {
        $entries = $this->entries();
        $this->assertCount(1, $entries);
        return $entries[0];
    }

    /**
     * A prompt found whole in the store starts from the logits its first
     * evaluation stored with the state, and gives a fresh evaluation's reply.
     * Before the entries held them, the last token was evaluated again alone
     * (llama.cpp rounds one row otherwise than a batch), and this prompt's
     * reply differed ("The first colour of the rainbow is red.").
     */
    public function testAPromptFoundWholeInTheStoreGivesTheFreshReply(): void
    {
        $code = <<<'PHP'
            $m = Displace\Infer\Model::load($argv[1], ['n_threads' => 1]);
            $q = 'List the colours of the rainbow and say one thing about each colour, in a numbered list. Keep each line short and simple, and start with red, which is the first colour of the rainbow.';
            $r = $m->chat(Displace\Infer\Prompt::user($q), maxTokens: 24, nCtx: 512, options: ['cache_prompt' => $argv[2] === 'cached']);
            echo json_encode(['text' => $r->text(), 'cached' => $r->cachedTokens(), 'prompt' => $r->promptTokens()]);
            PHP;
        $ini = ['infer.prompt_cache_dir' => $this->store];
        $run = fn (string $mode) => json_decode($this->phpOutput($ini, $code, [self::modelPath(), $mode]), true, flags: JSON_THROW_ON_ERROR);
        $fresh = $run('fresh');
        $first = $run('cached');
        $this->assertSame(0, $first['cached']);
        $this->assertCount(1, $this->entries(), 'the first process stored its prompt');
        $second = $run('cached');
        $this->assertSame($fresh['text'], $second['text'], 'the reply of a fresh evaluation');
        $this->assertSame($second['prompt'], $second['cached'], 'the prompt was found whole in the store');
    }

    public function testASecondProcessStartsFromWhatTheFirstStored(): void
    {
        [$first, $stats] = $this->runSteps(['calls' => [[1, 'How are you?'], [1, 'Where is it?']]]);
        $this->assertSame(['none', 'memory'], array_column($first, 'cache'));
        $this->assertSame([0, 1, 1], [$stats['hits'], $stats['misses'], $stats['writes']]);
        $this->assertSame(0700, fileperms($this->store) & 0777);
        $this->assertSame(0600, fileperms($this->onlyEntry()) & 0777);
        $this->assertMatchesRegularExpression('/^' . preg_quote($this->store, '/') . ': 1 prefixes, [\d.]+ of 512 MiB$/', $stats['store']);

        // Another process, the second question: the system prompt comes from
        // the store, and the answer is the one the first process gave from
        // its memory.
        [$second, $stats] = $this->runSteps(['calls' => [[1, 'Where is it?']]]);
        $this->assertSame('shared', $second[0]['cache']);
        $this->assertGreaterThanOrEqual(self::systemTokens(1), $second[0]['cached']);
        $this->assertSame($first[1]['cached'], $second[0]['cached']);
        $this->assertSame($first[1]['text'], $second[0]['text']);
        $this->assertSame([1, 0, 0], [$stats['hits'], $stats['misses'], $stats['writes']]);
    }

    /**
     * A prompt with an image: another process asking about the same image starts from the stored state, image
     * included; another image finds only what comes before it, and a model loaded without that projector nothing.
     *
     * @group second-model
     */
    public function testAnImagesEvaluationIsSharedAndAnotherImageFindsOnlyWhatIsBeforeIt(): void
    {
        $mmproj = getenv('INFER_VISION_MODEL') ?: dirname(__DIR__) . '/models/SmolLM2-135M-colour-mmproj.gguf';
        $load = ['mmproj' => $mmproj];
        [[$first]] = $this->runSteps(['calls' => [[4, 'What colour is this image?', 'r']], 'load' => $load]);
        $this->assertSame('none', $first['cache']);
        [[$same]] = $this->runSteps(['calls' => [[4, 'Name the colour of this image.', 'r']], 'load' => $load]);
        $this->assertSame('shared', $same['cache']);
        // The system prompt, the user turn's opening and the image's 4 tokens.
        $this->assertGreaterThan(self::systemTokens(4) + 4, $same['cached']);
        [[$other]] = $this->runSteps(['calls' => [[4, 'Name the colour of this image.', 'b']], 'load' => $load]);
        $this->assertSame('shared', $other['cache']);
        $this->assertLessThan($same['cached'] - 3, $other['cached']);
        $this->assertStringContainsString('blue', $other['text']);
        [[$plain]] = $this->runSteps(['calls' => [[4, 'What colour is this image?']]]);
        $this->assertSame(0, $plain['cached'], 'a model without the projector has another key');
    }

    public function testAnotherModelFileOrATouchedOneFindsNothing(): void
    {
        $copy = $this->tempFile((string) file_get_contents(self::modelPath()));
        $this->runSteps(['calls' => [[2, 'How are you?']], 'model' => $copy]);
        $this->assertCount(1, $this->entries());
        // The same bytes in another file, then the same file touched.
        [$other] = $this->runSteps(['calls' => [[2, 'Where is it?']]]);
        touch($copy, time() + 5);
        [$touched] = $this->runSteps(['calls' => [[2, 'Where is it?']], 'model' => $copy]);
        foreach (['another file' => $other, 'a touched file' => $touched] as $what => [$call]) {
            $this->assertSame('none', $call['cache'], $what);
            $this->assertSame(0, $call['cached'], $what);
        }
    }

    /**
     * llama.cpp writes the number of KV streams into a state: chatMany()'s
     * contexts (one stream per sequence) share with each other, not with a
     * single chat()'s.
     */
    public function testAnotherKvLayoutFindsNothing(): void
    {
        $calls = [[3, 'How are you?'], [3, 'Where is it?']];
        $this->runSteps(['calls' => $calls, 'parallel' => 2]);
        [$single] = $this->runSteps(['calls' => [[3, 'How are you?']]]);
        $this->assertSame('none', $single[0]['cache']);
        [$many] = $this->runSteps(['calls' => $calls, 'parallel' => 2]);
        // The first from the store, the second from what the first kept in memory.
        $this->assertSame(['shared', 'memory'], array_column($many, 'cache'));
        foreach ($many as $i => $call) {
            $this->assertGreaterThanOrEqual(self::systemTokens(3), $call['cached'], "prompt $i");
        }
    }

    /**
     * Entries damaged in every way a file can be: each is rejected in a
     * process of its own, which answers what it answers with no store
     * (evaluating the prompt), and writes a whole entry in its place.
     */
    public function testDamagedEntriesAreRejectedAndReplaced(): void
    {
        $job = ['calls' => [[4, 'How are you?']]];
        [[$reference]] = $this->runSteps($job);
        $entry = $this->onlyEntry();
        $pristine = (string) file_get_contents($entry);
        $copy = $this->tempFile((string) file_get_contents(self::modelPath()));
        $this->runSteps(['calls' => [[4, 'How are you?']], 'model' => $copy]);
        $foreign = (string) file_get_contents(current(array_diff($this->entries(), [$entry])));
        $damages = [
            'truncated' => substr($pristine, 0, intdiv(strlen($pristine), 2)),
            'empty' => '',
            'a bit flipped in the keys and values' => substr_replace($pristine, chr(ord($pristine[-100]) ^ 4), -100, 1),
            'a bit flipped in the tokens' => substr_replace($pristine, chr(ord($pristine[50]) ^ 1), 50, 1),
            "another model's entry" => $foreign,
        ];
        foreach ($damages as $what => $bytes) {
            array_map('unlink', $this->entries());
            file_put_contents($entry, $bytes);
            chmod($entry, 0600);
            [[$call], $stats] = $this->runSteps($job);
            $this->assertSame($reference, $call, $what);
            $this->assertSame([0, 1, 1, 1], [$stats['hits'], $stats['misses'], $stats['rejected'], $stats['writes']], $what);
            $this->assertSame(strlen($pristine), filesize($entry), "$what: replaced by a whole entry");
        }
    }

    /**
     * An entry whose checksum holds but whose state llama.cpp refuses (its
     * bytes zeroed, the CRC-32 written anew), met by a process whose
     * context holds part of the prompt already: the context is emptied by
     * the failed restore, and the prompt is evaluated whole, giving what a
     * fresh process gives.
     */
    public function testAStateLlamaCppRefusesIsEvaluatedInstead(): void
    {
        // The second question shares the system prompt with the first, and
        // the entry holds more than 16 tokens beyond it.
        $long = 'Where is it? Tell me the way from the station to the shop, street by street, and how long it takes.';
        [[$reference]] = $this->runSteps(['calls' => [[9, $long]]]);
        $entry = $this->onlyEntry();
        $bytes = (string) file_get_contents($entry);
        // The layout (src/engine/cache/prefix_store/): a 52-byte header
        // (token count at 24, state length at 32, logits count at 40, CRC-32
        // at 48), the tokens, the state, the logits. The state is zeroed and
        // the checksum made right, so that only llama.cpp can refuse it.
        $tokens = unpack('P', $bytes, 24)[1];
        $state = unpack('P', $bytes, 32)[1];
        $logits = unpack('P', $bytes, 40)[1];
        $body = substr($bytes, 52, 4 * $tokens) . str_repeat("\0", $state) . substr($bytes, 52 + 4 * $tokens + $state, 4 * $logits);
        $header = substr($bytes, 0, 48);
        $crc = hash('crc32b', $header . $body, true);
        file_put_contents($entry, $header . strrev($crc) . $body);
        [[$first, $second], $stats] = $this->runSteps(['calls' => [[9, 'How are you?'], [9, $long]]]);
        // The store gave the entry to both calls: refused by llama.cpp, it
        // is not kept in the process's memory either.
        $this->assertSame(2, $stats['hits']);
        $this->assertSame('none', $second['cache']);
        $this->assertSame($reference['text'], $second['text']);
    }

    public function testADirectoryWhereAnEntryShouldBeIsLeftAlone(): void
    {
        $job = ['calls' => [[5, 'How are you?']]];
        [[$reference]] = $this->runSteps($job);
        $entry = $this->onlyEntry();
        unlink($entry);
        mkdir($entry);
        [[$call], $stats] = $this->runSteps($job);
        $this->assertSame($reference, $call);
        $this->assertSame([1, 1, 0], [$stats['rejected'], $stats['failed_writes'], $stats['writes']]);
        $this->assertDirectoryExists($entry);
        $this->assertSame([basename($entry)], array_values(array_diff(scandir($this->store), ['.', '..'])), 'no temporary file left');
    }

    /**
     * A directory the process cannot write to (root without
     * CAP_DAC_OVERRIDE honours the mode) and one that is full (a file size
     * limit, its signal ignored as a full disk gives ENOSPC): the write
     * fails, the answer does not change, nothing is left behind.
     */
    public function testAReadOnlyOrFullDirectoryCostsOnlyTheWrite(): void
    {
        $job = ['calls' => [[6, 'How are you?']]];
        mkdir($this->store, 0700);
        [[$reference]] = $this->runSteps($job);
        array_map('unlink', $this->entries());
        $wraps = [
            'read-only' => posix_getuid() === 0
                ? ['setpriv', '--bounding-set=-dac_override,-dac_read_search', '--inh-caps=-dac_override,-dac_read_search']
                : [],
            'full' => ['bash', '-c', 'trap "" XFSZ; ulimit -f 1024; exec "$@"', 'bash'],
        ];
        foreach ($wraps as $what => $wrap) {
            chmod($this->store, $what === 'read-only' ? 0500 : 0700);
            [[$call], $stats] = $this->runSteps($job, $wrap);
            $this->assertSame($reference, $call, $what);
            $this->assertSame([0, 1, 0], [$stats['writes'], $stats['failed_writes'], $stats['rejected']], $what);
            $this->assertSame([], array_values(array_diff(scandir($this->store), ['.', '..'])), "$what: nothing left");
        }
    }

    /** The directory is the administrator's setting: a script's open_basedir does not fence it. */
    public function testOpenBasedirDoesNotApplyToTheStore(): void
    {
        $allowed = implode(':', [dirname(__DIR__), dirname(self::modelPath())]);
        $this->assertStringStartsNotWith(dirname(__DIR__), $this->store);
        $fenced = ['-d', "open_basedir=$allowed"];
        $job = ['calls' => [[8, 'How are you?']]];
        $this->runSteps($job, [], $fenced);
        [[$call], $stats] = $this->runSteps(['calls' => [[8, 'Where is it?']]], [], $fenced);
        $this->assertSame('shared', $call['cache']);
        $this->assertSame(1, $stats['hits']);
    }

    public function testTwoWritersRacingLeaveOneWholeEntry(): void
    {
        $job = ['calls' => [[7, 'How are you?']]];
        $a = $this->start($job);
        $b = $this->start($job);
        [[$first]] = self::finish($a);
        [[$second]] = self::finish($b);
        $this->assertSame($first['text'], $second['text']);
        $this->assertSame([basename($this->onlyEntry())], array_values(array_diff(scandir($this->store), ['.', '..'])));
        [[$third], $stats] = $this->runSteps(['calls' => [[7, 'How are you?']]]);
        $this->assertSame('shared', $third['cache']);
        $this->assertSame($first['text'], $third['text']);
        $this->assertSame(1, $stats['hits']);
    }

    /** A directory other users can write to could hold anyone's entries: it is not used, and phpinfo() says why. */
    public function testADirectoryOthersCanWriteToIsNotUsed(): void
    {
        mkdir($this->store);
        chmod($this->store, 0777);
        [[$call], $stats] = $this->runSteps(['calls' => [[1, 'How are you?']]]);
        $this->assertSame('none', $call['cache']);
        $this->assertSame([0, 0, 0], [$stats['hits'], $stats['misses'], $stats['writes']]);
        $this->assertSame("{$this->store} not used: other users can write to it (mode 777)", $stats['store']);
        $this->assertSame([], $this->entries());
    }

    public function testTheExampleStartsFromTheStoreOnItsSecondRun(): void
    {
        $run = function (): string {
            $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension(), '-d', "infer.prompt_cache_dir={$this->store}",
                dirname(__DIR__) . '/examples/shared-prompts.php', self::modelPath()];
            $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            $out = stream_get_contents($pipes[1]);
            $this->assertSame('', stream_get_contents($pipes[2]));
            $this->assertSame(0, proc_close($proc), $out);
            return $out;
        };
        $first = $run();
        $second = $run();
        $this->assertMatchesRegularExpression('/^invoices +0 of \d+ prompt tokens from none/m', $first);
        $this->assertMatchesRegularExpression('/^invoices +\d{3} of \d+ prompt tokens from shared/m', $second);
        $this->assertMatchesRegularExpression('/^tickets +\d{3} of \d+ prompt tokens from shared/m', $second);
    }

    public function testTheSettingsCannotBeChangedFromAScript(): void
    {
        foreach (['infer.prompt_cache_dir', 'infer.prompt_cache_dir_mb', 'infer.prompt_cache_dir_min_tokens'] as $name) {
            $before = ini_get($name);
            $this->assertFalse(ini_set($name, '/tmp'), $name);
            $this->assertSame($before, ini_get($name), $name);
        }
    }

    /**
     * PHP-FPM, four workers that load the model at each request (so only
     * the store can carry a prefix from one request to the next), eight
     * system prompts: each is evaluated once on the machine, then every
     * worker starts from it.
     * @group fpm
     */
    public function testFpmWorkersEvaluateEachPrefixOnce(): void
    {
        self::requireExtension('posix');
        $fpm = new Fpm(4, self::modelPath(), ['infer.prompt_cache_dir' => $this->store, 'infer.prompt_cache_dir_min_tokens' => '32']);
        try {
            $script = __DIR__ . '/support/fpm-worker.php';
            $ask = function (array $queries) use ($fpm, $script): array {
                $sockets = array_map(fn ($q) => fcgi_send('127.0.0.1', $fpm->port, $script, $q + ['case' => 'system']), $queries);
                return array_map(function ($socket) {
                    [$body, $stderr] = fcgi_read($socket);
                    $this->assertSame('', $stderr);
                    $r = json_decode($body, true, flags: JSON_THROW_ON_ERROR);
                    $this->assertArrayNotHasKey('error', $r);
                    return $r;
                }, $sockets);
            };
            $evaluated = 0;
            foreach (range(0, 7) as $sys) {
                [$r] = $ask([['sys' => $sys, 'q' => 'How are you?']]);
                $this->assertSame('none', $r['result']['cache'], "first sight of prompt $sys");
                $evaluated += $r['result']['prompt'] - $r['result']['cached'];
            }
            $firstSight = $evaluated;
            $pids = [];
            foreach (range(0, 7) as $sys) {
                $four = array_map(fn ($i) => ['sys' => $sys, 'q' => "Question $i?"], range(1, 4));
                foreach ($ask($four) as $r) {
                    $pids[$r['pid']] = true;
                    $this->assertSame('shared', $r['result']['cache'], "prompt $sys");
                    $this->assertGreaterThanOrEqual(self::systemTokens($sys), $r['result']['cached'], "prompt $sys");
                    $evaluated += $r['result']['prompt'] - $r['result']['cached'];
                }
            }
            $this->assertCount(4, $pids, 'every worker answered');
            // Besides the first sight of each prefix, only the questions' own tokens.
            $this->assertLessThan(32 * 20, $evaluated - $firstSight);
            $this->assertGreaterThan(8 * self::systemTokens(0), $firstSight);
        } finally {
            $fpm->stop();
        }
    }

    /** Run one process with a deadline; a process still running then is killed and the test fails. */
    private function runWithin(float $seconds, array $job, array $flags = []): array
    {
        [$proc, $pipes] = $this->start($job, [], $flags);
        $deadline = microtime(true) + $seconds;
        // The exit code is reported once, by the first look after the exit.
        while (($status = proc_get_status($proc))['running'] && microtime(true) < $deadline) {
            usleep(50000);
        }
        if ($status['running']) {
            proc_terminate($proc, SIGKILL);
            proc_close($proc);
            $this->fail("the process did not finish within $seconds s");
        }
        $out = stream_get_contents($pipes[1]);
        $this->assertSame('', stream_get_contents($pipes[2]));
        proc_close($proc);
        $this->assertSame(0, $status['exitcode'], $out);
        $lines = array_map(fn ($l) => json_decode($l, true, flags: JSON_THROW_ON_ERROR), explode("\n", trim($out)));
        $stats = array_pop($lines);
        return [$lines, $stats];
    }

    /**
     * An entry whose header claims a state of 512 GiB (a sparse file, so
     * that its length agrees), under a directory bound of 1 TiB: the model
     * can need a few MiB for those tokens, so it is rejected before any
     * allocation, removed, and the prompt is evaluated.
     */
    public function testAnEntryClaimingAHugeStateIsRejectedAndRemovedWithoutACrash(): void
    {
        $flags = ['-d', 'infer.prompt_cache_dir_mb=1048576'];
        [[$first]] = $this->runSteps(['calls' => [[1, 'How are you?']]], flags: $flags);
        $entry = $this->onlyEntry();
        $bytes = (string) file_get_contents($entry);
        $tokens = unpack('P', substr($bytes, 24, 8))[1];
        $claim = 512 << 30;
        // The 52-byte header: the state's length at 32, no logits (their
        // count at 40), so that the file's length agrees with the claim.
        $head = substr_replace(substr($bytes, 0, 52 + 4 * $tokens), pack('P', $claim) . pack('P', 0), 32, 16);
        file_put_contents($entry, $head);
        $f = fopen($entry, 'r+');
        ftruncate($f, 52 + 4 * $tokens + $claim);
        fclose($f);
        $this->assertSame(52 + 4 * $tokens + $claim, filesize($entry));
        [[$second], $stats] = $this->runSteps(['calls' => [[1, 'How are you?']]], flags: $flags);
        $this->assertSame('none', $second['cache']);
        $this->assertSame($first['text'], $second['text']);
        $this->assertSame([1, 0], [$stats['rejected'], $stats['hits']]);
        $this->assertLessThan(100 << 20, filesize($this->onlyEntry()), 'the huge entry is gone; the prompt was stored anew');
    }

    /** A FIFO under an entry's name: a reader would wait for a writer forever. */
    public function testAFifoInPlaceOfAnEntryDoesNotBlockALookup(): void
    {
        [[$first]] = $this->runSteps(['calls' => [[1, 'How are you?']]]);
        $entry = $this->onlyEntry();
        unlink($entry);
        posix_mkfifo($entry, 0600);
        [[$second], $stats] = $this->runWithin(60, ['calls' => [[1, 'How are you?']]]);
        $this->assertSame('none', $second['cache']);
        $this->assertSame($first['text'], $second['text']);
        $this->assertSame(1, $stats['rejected']);
        $this->assertFalse(filetype($entry) === 'fifo', 'the FIFO was removed');
    }

    /**
     * Another user plants a link where the store's directory will be; it
     * points to a directory of this user's: the store does not follow it
     * (it used to, and wrote its entries there).
     */
    public function testALinkAnotherUserPlantedInPlaceOfTheDirectoryIsNotFollowed(): void
    {
        if (posix_getuid() !== 0) {
            $this->fail('this test runs as root (as make test does), to act as another user');
        }
        $base = $this->store . '-sticky';
        mkdir($base);
        chmod($base, 01777);
        $target = $this->store . '-target';
        mkdir($target, 0700);
        try {
            $link = "$base/store";
            $nobody = posix_getpwnam('nobody');
            exec("setpriv --reuid={$nobody['uid']} --regid={$nobody['gid']} --clear-groups ln -s " . escapeshellarg($target) . ' ' . escapeshellarg($link) . ' 2>&1', $out, $status);
            $this->assertSame(0, $status, implode("\n", $out));
            $this->store = $link;
            [[$call], $stats] = $this->runSteps(['calls' => [[1, 'How are you?']]]);
            $this->assertSame('none', $call['cache']);
            $this->assertSame("$link not used: passes through the symbolic link $link; give the directory's real path", $stats['store']);
            $this->assertSame(['.', '..'], scandir($target), 'nothing written where the link points');
        } finally {
            exec('rm -rf ' . escapeshellarg($base) . ' ' . escapeshellarg($target));
        }
    }

    /** Applications separated by `infer.prompt_cache_namespace` (per PHP-FPM pool) never share an entry. */
    public function testNamespacesDoNotShareEntries(): void
    {
        $in = fn (string $ns) => ['-d', "infer.prompt_cache_namespace=$ns"];
        [[$shop]] = $this->runSteps(['calls' => [[1, 'How are you?']]], flags: $in('shop'));
        $this->assertSame('none', $shop['cache']);
        [[$blog], $stats] = $this->runSteps(['calls' => [[1, 'How are you?']]], flags: $in('blog'));
        $this->assertSame('none', $blog['cache'], "another namespace does not see the shop's entry");
        $this->assertSame([0, 1], [$stats['hits'], $stats['writes']]);
        [[$again], $stats] = $this->runSteps(['calls' => [[1, 'How are you?']]], flags: $in('shop'));
        $this->assertSame('shared', $again['cache'], 'the same namespace does');
        $this->assertSame($shop['text'], $again['text']);
        $this->assertCount(2, $this->entries());
    }
}
