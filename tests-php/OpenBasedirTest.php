<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

/**
 * Model::load() obeys open_basedir as PHP's own file functions do. Each case
 * runs in a PHP process of its own with open_basedir set; PHP's fopen() on
 * the same path, in the same process, is the independent judge of what the
 * setting allows.
 */
final class OpenBasedirTest extends InferTestCase
{
    private string $dir;

    protected function setUp(): void
    {
        $this->dir = sys_get_temp_dir() . '/infer-basedir-' . getmypid() . '-' . bin2hex(random_bytes(4));
        mkdir($this->dir . '/inner', 0777, true);
        // A file that passes the GGUF precheck, so that only open_basedir can refuse it.
        file_put_contents($this->dir . '/outside.gguf', "GGUF\x03\x00\x00\x00");
        symlink(self::modelPath(), $this->dir . '/inner/link.gguf');
    }

    protected function tearDown(): void
    {
        @unlink($this->dir . '/inner/link.gguf');
        @unlink($this->dir . '/outside.gguf');
        @rmdir($this->dir . '/inner');
        @rmdir($this->dir);
        parent::tearDown();
    }

    /**
     * Load $path under open_basedir=$basedir (from $cwd) in a fresh process.
     *
     * @return array{fopen: bool, outcome: string, stdout: string, stderr: string}
     */
    private function loadUnder(string $basedir, string $path, ?string $cwd = null): array
    {
        $extension = DefaultModel::extension();
        $code = <<<'PHP'
            $path = $argv[1];
            $h = @fopen($path, 'rb');
            $fopen = $h !== false;
            if ($h !== false) { fclose($h); }
            try {
                $model = Displace\Infer\Model::load($path);
                $outcome = 'loaded: ' . $model->contextLength();
            } catch (\Throwable $e) {
                $outcome = get_class($e) . ': ' . $e->getMessage();
            }
            file_put_contents('php://fd/3', json_encode(['fopen' => $fopen, 'outcome' => $outcome]));
            PHP;
        $cmd = [
            PHP_BINARY, '-n', '-d', 'extension=' . $extension, '-d', 'open_basedir=' . $basedir,
            '-d', 'display_errors=stderr', '-d', 'error_reporting=-1', '-r', $code, $path,
        ];
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w'], 3 => ['pipe', 'w']], $pipes, $cwd);
        $this->assertIsResource($proc);
        $stdout = stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);
        $result = stream_get_contents($pipes[3]);
        foreach ($pipes as $p) {
            fclose($p);
        }
        $this->assertSame(0, proc_close($proc), "exit code; stderr: $stderr");
        $decoded = json_decode((string) $result, true, flags: JSON_THROW_ON_ERROR);
        return $decoded + ['stdout' => $stdout, 'stderr' => $stderr];
    }

    private function assertRefused(string $basedir, string $path, ?string $cwd = null): void
    {
        $r = $this->loadUnder($basedir, $path, $cwd);
        $this->assertFalse($r['fopen'], "PHP's fopen() itself must refuse $path under open_basedir=$basedir");
        $this->assertSame(
            "Displace\\Infer\\ModelLoadException: open_basedir restriction in effect. File($path) is not within the allowed path(s): ($basedir)",
            $r['outcome'],
        );
        $this->assertSame('', $r['stdout'] . $r['stderr'], 'no warning or output');
    }

    private function assertAllowed(string $basedir, string $path, ?string $cwd = null): void
    {
        $r = $this->loadUnder($basedir, $path, $cwd);
        $this->assertTrue($r['fopen'], "PHP's fopen() itself must allow $path under open_basedir=$basedir");
        $this->assertStringStartsWith('loaded: ', $r['outcome']);
        $this->assertGreaterThan(0, (int) substr($r['outcome'], strlen('loaded: ')));
        $this->assertSame('', $r['stdout'] . $r['stderr'], 'no warning or output');
    }

    public function testAModelInsideTheAllowedDirectoryLoads(): void
    {
        $this->assertAllowed(dirname(self::modelPath()), self::modelPath());
    }

    public function testAModelOutsideTheAllowedDirectoryIsRefused(): void
    {
        $this->assertRefused($this->dir . '/inner', self::modelPath());
    }

    public function testAModelOutsideEveryOneOfSeveralDirectoriesIsRefused(): void
    {
        $this->assertRefused($this->dir . '/inner' . PATH_SEPARATOR . '/nonexistent', $this->dir . '/outside.gguf');
    }

    public function testASymlinkInsideThatPointsOutsideIsRefused(): void
    {
        $this->assertRefused($this->dir . '/inner', $this->dir . '/inner/link.gguf');
    }

    public function testDotDotOutOfTheAllowedDirectoryIsRefused(): void
    {
        $this->assertRefused($this->dir . '/inner', $this->dir . '/inner/../outside.gguf');
    }

    public function testDotDotThatStaysInsideIsAllowed(): void
    {
        $dir = dirname(self::modelPath());
        $path = $dir . '/../' . basename($dir) . '/' . basename(self::modelPath());
        $this->assertAllowed($dir, $path);
    }

    public function testARelativePathIsResolvedFromTheWorkingDirectory(): void
    {
        $dir = dirname(self::modelPath());
        $this->assertAllowed($dir, basename(self::modelPath()), $dir);
        $this->assertRefused($this->dir . '/inner', basename(self::modelPath()), $dir);
    }

    public function testAMissingFileOutsideIsRefusedBeforeItIsLookedFor(): void
    {
        $this->assertRefused($this->dir . '/inner', '/nonexistent/model.gguf');
    }

    public function testWithoutOpenBasedirEveryReadablePathLoads(): void
    {
        $this->assertAllowed('', $this->dir . '/inner/link.gguf');
    }
}
