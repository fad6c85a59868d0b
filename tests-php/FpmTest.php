<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Tests\Support\Fpm;

require_once __DIR__ . '/support/Fpm.php';

/**
 * Worker reuse under PHP-FPM: two workers (started by the test on a loopback
 * port) serve 500 requests mixing valid calls and bad inputs, from four
 * concurrent clients. Every request gets its own answer, no worker dies, and
 * nothing leaks between requests.
 *
 * @group slow
 * @group fpm
 */
final class FpmTest extends InferTestCase
{
    private const REQUESTS = 500;
    private const CLIENTS = 4;
    private const VALID = ['chat', 'schema', 'grammar'];
    private const BAD = [
        'bad-file' => 'Displace\Infer\ModelLoadException: model path is not a regular file',
        'bad-gguf' => 'Displace\Infer\ModelLoadException: not a GGUF file',
        'bad-schema' => 'Displace\Infer\InferException: ',
        'deep-schema' => 'Displace\Infer\InferException: schema nesting is deeper than 128 levels',
        'bad-grammar' => 'Displace\Infer\InferException: invalid grammar',
        'bad-utf8' => 'Displace\Infer\InferException: message content is not valid UTF-8',
        'nul' => 'Displace\Infer\InferenceException: message 0 (user) contains a NUL byte',
        'huge-ctx' => 'Displace\Infer\InferenceException: nCtx = ',
        'closed' => 'Displace\Infer\InferenceException: model has been closed',
    ];
    private const QUESTIONS = ['What is two plus two?', 'Name a fruit.', 'Is the sea salty?', 'Say hi.'];

    private ?Fpm $fpm = null;

    protected function tearDown(): void
    {
        $this->fpm?->stop();
        parent::tearDown();
    }

    /** The request plan: case and question for each request id. */
    private static function plan(): array
    {
        $cases = array_merge(self::VALID, self::VALID, array_keys(self::BAD));
        $plan = [];
        for ($i = 0; $i < self::REQUESTS; $i++) {
            $plan[$i] = [$cases[($i * 7) % count($cases)], self::QUESTIONS[$i % count(self::QUESTIONS)]];
        }
        return $plan;
    }

    public function testFiveHundredRequestsOnTwoWorkers(): void
    {
        // Missing tools fail the test: a skipped test would let CI pass without it.
        self::requireExtension('pcntl');
        self::requireExtension('posix');
        $this->fpm = $fpm = new Fpm(2, self::modelPath());
        $dir = $fpm->dir;
        $script = __DIR__ . '/support/fpm-worker.php';
        $plan = self::plan();

        // Four client processes, each sending its share of the requests in turn.
        $children = [];
        for ($c = 0; $c < self::CLIENTS; $c++) {
            $pid = pcntl_fork();
            if ($pid === 0) {
                $lines = [];
                for ($i = $c; $i < self::REQUESTS; $i += self::CLIENTS) {
                    [$case, $q] = $plan[$i];
                    try {
                        [$body, $stderr] = $fpm->get($script, ['case' => $case, 'id' => "r$i", 'q' => $q]);
                        $lines[] = json_encode(['i' => $i, 'body' => $body, 'stderr' => $stderr]);
                    } catch (\Throwable $e) {
                        $lines[] = json_encode(['i' => $i, 'body' => '', 'stderr' => 'client: ' . $e->getMessage()]);
                    }
                }
                file_put_contents("{$dir}/client-$c.jsonl", implode("\n", $lines));
                posix_kill(posix_getpid(), SIGKILL);
            }
            $children[] = $pid;
        }
        foreach ($children as $pid) {
            pcntl_waitpid($pid, $status);
        }

        $responses = [];
        foreach (glob("{$dir}/client-*.jsonl") as $file) {
            foreach (explode("\n", (string) file_get_contents($file)) as $line) {
                $r = json_decode($line, true);
                $responses[$r['i']] = $r;
            }
        }
        $this->assertCount(self::REQUESTS, $responses, 'every request got a response');

        $answers = [];
        $pids = [];
        foreach ($plan as $i => [$case, $q]) {
            $r = $responses[$i];
            $this->assertSame('', $r['stderr'], "request $i ($case): stderr");
            $body = json_decode($r['body'], true);
            $this->assertIsArray($body, "request $i ($case): body {$r['body']}");
            $this->assertSame("r$i", $body['id'], "request $i answered another request's id");
            $pids[$body['pid']] = true;
            if (isset(self::BAD[$case])) {
                $this->assertStringStartsWith(self::BAD[$case], $body['error'] ?? '', "request $i ($case)");
                continue;
            }
            $this->assertArrayNotHasKey('error', $body, "request $i ($case)");
            // Greedy decoding: the same case and question must give the same text every time.
            $answers["$case|$q"] ??= $body['result'];
            $this->assertSame($answers["$case|$q"], $body['result'], "request $i ($case, $q)");
        }
        $this->assertCount(count(self::VALID) * count(self::QUESTIONS), $answers);

        $log = $fpm->log();
        $this->assertStringNotContainsString('exited on signal', $log);
        $this->assertStringNotContainsString('exited with code', $log);
        $this->assertLessThanOrEqual(2, count($pids), 'a worker was replaced: ' . implode(', ', array_keys($pids)));
    }
}
