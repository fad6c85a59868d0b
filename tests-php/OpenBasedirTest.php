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

    /**
     * A script confined to jail/ calls chdir() into it and opens relative
     * paths: it must get jail's files, never those of the process's working
     * directory (outside the jail), which a thread-safe PHP's chdir() does
     * not move (its working directory is the request's, virtual). Each file
     * outside has a twin inside that differs: an image of another size, a
     * model file that is no model.
     */
    public function testAfterChdirARelativePathIsTheJailsFileOnEveryPhp(): void
    {
        require_once __DIR__ . '/support/images.php';
        $jail = $this->dir . '/inner';
        file_put_contents("$jail/img.png", Support\png(2, 2, Support\solid(2, 2, 255, 0, 0)));
        file_put_contents($this->dir . '/img.png', Support\png(3, 3, Support\solid(3, 3, 0, 0, 255)));
        if (!@link(self::modelPath(), "$jail/model.gguf")) {
            copy(self::modelPath(), "$jail/model.gguf");
        }
        file_put_contents($this->dir . '/model.gguf', "GGUF\x03\x00\x00\x00");
        $code = <<<'PHP'
            $out = ['chdir' => chdir($argv[1])];
            try {
                $image = Displace\Infer\Image::fromFile('img.png');
                $out['image'] = $image->width() . 'x' . $image->height();
            } catch (\Throwable $e) {
                $out['image'] = get_class($e) . ': ' . $e->getMessage();
            }
            try {
                $out['model'] = 'loaded: ' . Displace\Infer\Model::load('model.gguf')->contextLength();
            } catch (\Throwable $e) {
                $out['model'] = get_class($e) . ': ' . $e->getMessage();
            }
            $out['outside'] = @fopen('../img.png', 'rb') === false ? 'refused' : 'opened';
            echo json_encode($out);
            PHP;
        try {
            // The process starts in the directory above the jail.
            $proc = proc_open([
                PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension(), '-d', 'open_basedir=' . $jail,
                '-r', $code, $jail,
            ], [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, $this->dir);
            $this->assertIsResource($proc);
            $stdout = stream_get_contents($pipes[1]);
            $stderr = stream_get_contents($pipes[2]);
            fclose($pipes[1]);
            fclose($pipes[2]);
            $this->assertSame(0, proc_close($proc), $stderr);
            $this->assertSame('', $stderr);
            $out = json_decode((string) $stdout, true, flags: JSON_THROW_ON_ERROR);
        } finally {
            @unlink("$jail/img.png");
            @unlink($this->dir . '/img.png');
            @unlink("$jail/model.gguf");
            @unlink($this->dir . '/model.gguf');
        }
        $this->assertTrue($out['chdir']);
        $this->assertSame('refused', $out['outside'], 'PHP itself keeps the script in the jail');
        $this->assertSame('2x2', $out['image'], 'the jail\'s image, not the working directory\'s 3x3 one');
        $this->assertStringStartsWith('loaded: ', $out['model'], 'the jail\'s model, not the damaged file outside');
    }

    public function testWithoutOpenBasedirEveryReadablePathLoads(): void
    {
        $this->assertAllowed('', $this->dir . '/inner/link.gguf');
    }
}
