<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Tests\Support\LlamaServer;

/**
 * Every PHP code block of docs/ runs: the blocks of a page, in order, as one
 * script from the repository root, with assertions on and every notice
 * treated as a failure. The guide cannot rot.
 *
 * @group second-model
 */
final class DocsTest extends InferTestCase
{
    private const DOCS = __DIR__ . '/../docs';

    /** The address the remote page connects to, replaced by a live llama-server's. */
    private const REMOTE_URL = 'http://127.0.0.1:8080';

    /** @return array<string, array{string}> */
    public static function pages(): array
    {
        $pages = [];
        foreach (glob(self::DOCS . '/*.md') as $file) {
            $pages[basename($file)] = [$file];
        }
        return $pages;
    }

    /** The page's PHP blocks as one script: `<?php` once, each `use` line once. */
    private static function script(string $markdown): ?string
    {
        preg_match_all('/^```php\n(.*?)^```$/ms', $markdown, $m);
        if ($m[1] === []) {
            return null;
        }
        $lines = ['<?php'];
        $uses = [];
        foreach ($m[1] as $block) {
            foreach (explode("\n", $block) as $line) {
                if (trim($line) === '<?php') {
                    continue;
                }
                if (str_starts_with($line, 'use ')) {
                    if (isset($uses[$line])) {
                        continue;
                    }
                    $uses[$line] = true;
                }
                $lines[] = $line;
            }
        }
        return implode("\n", $lines) . "\n";
    }

    /** @return array{int, string, string} exit status, stdout, stderr */
    private static function execute(string $script): array
    {
        $file = tempnam(sys_get_temp_dir(), 'infer-docs-') . '.php';
        file_put_contents($file, $script);
        $cmd = ['timeout', '600', PHP_BINARY, '-d', 'extension=' . DefaultModel::extension(),
            '-d', 'zend.assertions=1', '-d', 'assert.exception=1', '-d', 'error_reporting=-1',
            '-d', 'display_errors=stderr', '-d', 'log_errors=0', $file];
        $process = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, dirname(__DIR__));
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        $status = proc_close($process);
        unlink($file);
        return [$status, $out, $err];
    }

    /** @dataProvider pages */
    public function testEveryCodeBlockOfThePageRuns(string $page): void
    {
        $script = self::script((string) file_get_contents($page));
        if (basename($page) === 'README.md') {
            $this->assertNull($script, 'the index has no code');
            return;
        }
        $this->assertNotNull($script, basename($page) . ' has no PHP block to run');
        $server = null;
        if (str_contains($script, self::REMOTE_URL)) {
            $server = new LlamaServer(self::modelPath());
            $script = str_replace(self::REMOTE_URL, $server->url, $script);
        }
        try {
            [$status, $out, $err] = self::execute($script);
        } finally {
            $server?->stop();
        }
        $this->assertSame('', $err, basename($page) . " wrote to stderr:\n$err\nstdout:\n$out");
        $this->assertSame(0, $status, basename($page) . " exited with $status:\n$out");
    }

    /** The harness can fail: a false assertion in a block is a failure. */
    public function testAFailingBlockFails(): void
    {
        $script = self::script("Text.\n\n```php\n<?php\nuse Displace\\Infer\\Schema;\n\$a = 1;\n```\n\nMore.\n\n```php\nuse Displace\\Infer\\Schema;\nassert(\$a === 2);\n```\n");
        $this->assertSame("<?php\nuse Displace\\Infer\\Schema;\n\$a = 1;\n\nassert(\$a === 2);\n\n", $script);
        [$status, , $err] = self::execute((string) $script);
        $this->assertNotSame(0, $status);
        $this->assertStringContainsString('AssertionError', $err);
    }
}
