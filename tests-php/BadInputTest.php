<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

/**
 * The bad-input matrix (tests-php/support/bad-inputs.php): every case runs in
 * a PHP process of its own, must exit normally within the time limit, print
 * nothing, and throw exactly the expected exception with the expected message
 * (or, for huge-but-valid inputs, succeed).
 *
 * @group slow
 */
final class BadInputTest extends InferTestCase
{
    private const TIME_LIMIT = 120;

    public function cases(): array
    {
        $out = [];
        foreach (array_keys(require __DIR__ . '/support/bad-inputs.php') as $name) {
            $out[$name] = [$name];
        }
        return $out;
    }

    public function testTheMatrixHasAtLeastEightyCases(): void
    {
        $this->assertGreaterThanOrEqual(80, count($this->cases()));
    }

    /** @dataProvider cases */
    public function testCase(string $name): void
    {
        [, $class, $fragment] = (require __DIR__ . '/support/bad-inputs.php')[$name];
        $extension = DefaultModel::extension();
        $result = $this->tempFile('', '.json');
        $cmd = [
            PHP_BINARY, '-n', '-d', 'extension=' . $extension, '-d', 'memory_limit=1G', '-d', 'display_errors=stderr',
            __DIR__ . '/support/run-case.php', $name, $result,
        ];
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, ['INFER_MODEL' => self::modelPath()]);
        $this->assertIsResource($proc);
        stream_set_blocking($pipes[1], false);
        stream_set_blocking($pipes[2], false);
        [$stdout, $stderr] = ['', ''];
        $deadline = microtime(true) + self::TIME_LIMIT;
        do {
            $stdout .= stream_get_contents($pipes[1]);
            $stderr .= stream_get_contents($pipes[2]);
            $status = proc_get_status($proc);
            usleep(10000);
        } while ($status['running'] && microtime(true) < $deadline);
        if ($status['running']) {
            proc_terminate($proc, 9);
        }
        $stdout .= stream_get_contents($pipes[1]);
        $stderr .= stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        proc_close($proc);

        $this->assertFalse($status['running'], "still running after " . self::TIME_LIMIT . " s");
        $this->assertFalse($status['signaled'], "killed by signal {$status['termsig']}; stderr: $stderr");
        $this->assertSame(0, $status['exitcode'], "exit code; stderr: $stderr");
        $this->assertSame('', $stdout, 'nothing on stdout');
        $this->assertSame('', $stderr, 'nothing on stderr');
        $outcome = json_decode((string) file_get_contents($result), true, flags: JSON_THROW_ON_ERROR);
        $this->assertSame($class, $outcome['class'], 'outcome; message: ' . $outcome['message']);
        $this->assertStringContainsString($fragment, $outcome['message']);
        $this->assertLessThan(256 << 20, $outcome['peak_memory'], 'PHP memory');
    }
}
