<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Tests\Support\Fpm;

use function Displace\Infer\Tests\Support\fcgi_read;
use function Displace\Infer\Tests\Support\fcgi_send;

require_once __DIR__ . '/support/Fpm.php';

/**
 * The extension's php.ini settings are refused loudly: a value out of range,
 * not a number, or relative where a path must be absolute is named in a
 * startup warning (php.ini, `-d`) or in the error log (a PHP-FPM pool's
 * `php_admin_value`, seen first by the worker), and the feature it belongs
 * to stays off — a shared load then fails naming the setting. No value
 * silently changes meaning.
 */
final class SettingsTest extends InferTestCase
{
    /** @return array<string, array{string, string, string, string}> setting, value, why, what stays off */
    public static function refusals(): array
    {
        $number = fn (int $min, int $max) => "not a whole number from $min to $max";
        $relative = 'not an absolute path (a relative one would depend on each request\'s working directory)';
        $cases = [
            ['infer.max_persistent_models', '-1', $number(0, 1024), 'no model is kept between requests'],
            ['infer.prompt_cache_mb', 'lots', $number(0, 1048576), 'the prompt cache stays off'],
            ['infer.prompt_cache_min_tokens', '-5', $number(0, 1073741824), 'the prompt cache stays off'],
            ['infer.prompt_cache_dir', 'relative/store', $relative, 'the prompt store stays off'],
            ['infer.prompt_cache_dir_mb', '-1', $number(0, 1048576), 'the prompt store stays off'],
            ['infer.prompt_cache_dir_min_tokens', '1e3', $number(0, 1073741824), 'the prompt store stays off'],
            ['infer.prompt_cache_namespace', 'shop/blog', "not a name of at most 64 letters, digits, '.', '_' and '-'", 'the prompt store stays off'],
            ['infer.server_model', 'models/x.gguf', $relative, 'the shared server stays off'],
            ['infer.server_slots', '0', $number(1, 256), 'the shared server stays off'],
            ['infer.server_threads', '9999', $number(0, 512), 'the shared server stays off'],
            ['infer.server_ctx', '10', $number(64, 16777216), 'the shared server stays off'],
            ['infer.server_dir', 'state', $relative, 'the shared server stays off'],
            ['infer.server_port', '8080', 'the shared server listens only on the Unix socket in its state directory (a TCP port on 127.0.0.1 can be taken first by another local user, who would then get the key and every prompt); remove the setting', 'the shared server stays off'],
            ['infer.server_log', 'server.log', $relative, 'the shared server stays off'],
            ['infer.server_idle', '-1', $number(0, 1073741824), 'the shared server stays off'],
            ['infer.server_binary', 'bin/llama-server', $relative, 'the shared server stays off'],
            ['infer.server_start_timeout', '0', $number(1, 3600), 'the shared server stays off'],
            ['infer.server_mmproj', 'models/mmproj.gguf', $relative, 'the shared server stays off'],
            ['infer.server_lora', '/models/a.gguf:b.gguf', 'not absolute paths separated by \':\' (a relative one would depend on each request\'s working directory)', 'the shared server stays off'],
            ['infer.max_image_pixels', '0', $number(1, 4294967296), 'images are bounded by the default of 16777216 pixels'],
            ['infer.max_lora_contexts', '65', $number(1, 64), 'lora_contexts is bounded by the default of 8'],
            ['infer.max_image_side', '0', $number(1, 4294967295), 'images are bounded by the default of 16384 pixels a side'],
        ];
        $named = [];
        foreach ($cases as $case) {
            $named[$case[0]] = $case;
        }
        return $named;
    }

    /**
     * What one PHP process with `-d $ini` says: its stderr, and what the
     * probe script found (the shared load's error, the caches' phpinfo rows,
     * the persistent models kept).
     *
     * @return array{string, array<string, mixed>}
     */
    private function probe(array $ini): array
    {
        $store = sys_get_temp_dir() . '/infer-settings-store-' . getmypid();
        $ini += ['infer.server_model' => self::modelPath(), 'infer.prompt_cache_dir' => $store];
        $cmd = [PHP_BINARY, '-d', 'extension=' . DefaultModel::extension()];
        foreach ($ini as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        $script = <<<'PHP'
            use Displace\Infer\Model;
            $out = [];
            try {
                Model::load($argv[1], ['shared' => true]);
                $out['shared'] = 'loaded';
            } catch (Throwable $e) {
                $out['shared'] = get_class($e) . ': ' . $e->getMessage();
            }
            Model::load($argv[1], ['persistent' => true]);
            ob_start();
            phpinfo(INFO_MODULES);
            $info = (string) ob_get_clean();
            foreach (['prompt cache (memory)', 'prompt cache (shared)', 'persistent models held'] as $row) {
                preg_match('/^' . preg_quote($row, '/') . ' => (.*)$/m', $info, $m);
                $out[$row] = $m[1] ?? null;
            }
            echo json_encode($out);
            PHP;
        array_push($cmd, '-r', $script, self::modelPath());
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        $this->assertSame(0, proc_close($proc), $out . $err);
        $found = json_decode($out, true);
        $this->assertIsArray($found, $out);
        if (is_dir($store)) {
            exec('rm -rf ' . escapeshellarg($store));
        }
        return [$err, $found];
    }

    /** @dataProvider refusals */
    public function testARefusedSettingIsNamedAtStartupAndItsFeatureStaysOff(string $name, string $value, string $why, string $off): void
    {
        // The server's model set to something else than the valid default
        // when it is the setting tried.
        [$stderr, $found] = $this->probe([$name => $value]);
        $refusal = "php.ini $name = \"$value\" is refused: $why";
        $this->assertSame("PHP Warning:  PHP Startup: infer: $refusal; $off in Unknown on line 0\n", $stderr);
        $shared = str_starts_with($name, 'infer.server_');
        $store = in_array($name, ['infer.prompt_cache_dir', 'infer.prompt_cache_dir_mb', 'infer.prompt_cache_dir_min_tokens', 'infer.prompt_cache_namespace'], true);
        if ($shared) {
            $this->assertSame("Displace\\Infer\\ModelLoadException: $refusal", $found['shared']);
        }
        if ($store) {
            $dir = $name === 'infer.prompt_cache_dir' ? $value : sys_get_temp_dir() . '/infer-settings-store-' . getmypid();
            $this->assertSame("$dir not used: $refusal", $found['prompt cache (shared)']);
        }
        if ($name === 'infer.prompt_cache_mb' || $name === 'infer.prompt_cache_min_tokens') {
            $this->assertSame('0 prefixes, 0.0 of 0 MiB', $found['prompt cache (memory)']);
        }
        if ($name === 'infer.max_persistent_models') {
            $this->assertSame('0', $found['persistent models held']);
        }
    }

    public function testValidSettingsSayNothing(): void
    {
        [$stderr, $found] = $this->probe(['infer.server_port' => '0', 'infer.prompt_cache_namespace' => 'shop-1.a_b', 'infer.server_start_timeout' => '3600']);
        $this->assertSame('', $stderr);
        $this->assertSame('1', $found['persistent models held']);
        $this->assertSame('0 prefixes, 0.0 of 128 MiB', $found['prompt cache (memory)']);
    }

    /**
     * A PHP-FPM pool's `php_admin_value` is applied in the worker, after
     * the extension started in the master: the worker says it in the error
     * log (without an `error_log`, the FastCGI error stream the web server
     * logs) once, never in a response's body, and the store stays off.
     * @group fpm
     */
    public function testARefusedPoolValueGoesToTheErrorLogOnceAndNotToTheResponse(): void
    {
        self::requireExtension('posix');
        $fpm = new Fpm(1, self::modelPath(), [], ['infer.prompt_cache_dir' => 'relative/store']);
        try {
            $script = __DIR__ . '/support/fpm-worker.php';
            $refusal = 'php.ini infer.prompt_cache_dir = "relative/store" is refused: not an absolute path (a relative one would depend on each request\'s working directory)';
            $said = [];
            foreach ([1, 2, 3] as $request) {
                [$body, $stderr] = fcgi_read(fcgi_send('127.0.0.1', $fpm->port, $script, ['case' => 'store-row']));
                $this->assertSame("relative/store not used: $refusal", json_decode($body, true)['result'] ?? $body, "request $request");
                $said[] = $stderr;
            }
            $this->assertSame(["PHP message: infer: $refusal; the prompt store stays off", '', ''], $said, 'said by the first request of the worker only');
        } finally {
            $fpm->stop();
        }
    }
}
