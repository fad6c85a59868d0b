<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

/** php-stubs/infer.php declares exactly what the extension registers. */
final class StubsTest extends InferTestCase
{
    private const STUBS = __DIR__ . '/../php-stubs/infer.php';

    /** @return array<string, mixed> */
    private static function describeStubs(): array
    {
        $cmd = sprintf(
            '%s -n %s %s',
            escapeshellarg(PHP_BINARY),
            escapeshellarg(__DIR__ . '/support/describe.php'),
            escapeshellarg(self::STUBS),
        );
        exec($cmd, $lines, $status);
        self::assertSame(0, $status, "describing the stubs failed:\n" . implode("\n", $lines));
        return json_decode(implode("\n", $lines), true, flags: JSON_THROW_ON_ERROR);
    }

    /** @return array<string, mixed> */
    private static function describeExtension(): array
    {
        require_once __DIR__ . '/support/describe.php';
        $classes = (new \ReflectionExtension('infer'))->getClassNames();
        return json_decode(json_encode(infer_describe_api($classes), JSON_THROW_ON_ERROR), true);
    }

    public function testStubsDeclareTheSameClassesAsTheExtension(): void
    {
        $this->assertSame(array_keys(self::describeExtension()), array_keys(self::describeStubs()));
    }

    public function testStubsMatchTheExtensionClassByClass(): void
    {
        $stubs = self::describeStubs();
        foreach (self::describeExtension() as $class => $described) {
            $this->assertSame($described, $stubs[$class] ?? null, "stub of $class differs from the extension");
        }
    }

    public function testTheExtensionRegistersTheWholeContract(): void
    {
        $this->assertSame(
            [
                'Displace\\Infer\\Constraint',
                'Displace\\Infer\\Description',
                'Displace\\Infer\\Embedding',
                'Displace\\Infer\\Grammar',
                'Displace\\Infer\\Image',
                'Displace\\Infer\\InferException',
                'Displace\\Infer\\InferenceException',
                'Displace\\Infer\\ListOf',
                'Displace\\Infer\\Message',
                'Displace\\Infer\\Model',
                'Displace\\Infer\\ModelLoadException',
                'Displace\\Infer\\Prompt',
                'Displace\\Infer\\RerankModel',
                'Displace\\Infer\\Response',
                'Displace\\Infer\\Schema',
                'Displace\\Infer\\Stream',
                'Displace\\Infer\\ToolCall',
            ],
            array_keys(self::describeExtension()),
        );
    }

    /**
     * The `$options` shape of each generation method (and of Model::load()
     * and connect()) in the stubs names the
     * options the extension knows for it (its message for an unknown option
     * lists them), but for those the method refuses with a reason of their
     * own (`raw()` and its variants refuse the chat's): what Reflection
     * cannot see, a docblock, checked against the extension.
     */
    public function testTheOptionShapesNameEveryOptionTheExtensionTakes(): void
    {
        $stubs = (string) file_get_contents(self::STUBS);
        $model = self::model();
        $prompt = \Displace\Infer\Prompt::user('Hi');
        $calls = [
            'chat' => fn (array $o) => $model->chat($prompt, maxTokens: 1, options: $o),
            'raw' => fn (array $o) => $model->raw('Hi', maxTokens: 1, options: $o),
            'stream' => fn (array $o) => $model->stream($prompt, maxTokens: 1, options: $o),
            'rawStream' => fn (array $o) => $model->rawStream('Hi', maxTokens: 1, options: $o),
            'chatMany' => fn (array $o) => $model->chatMany([$prompt], maxTokens: 1, options: $o),
            'rawMany' => fn (array $o) => $model->rawMany(['Hi'], maxTokens: 1, options: $o),
            // The first `load(` of the stubs is Model's.
            'load' => fn (array $o) => \Displace\Infer\Model::load(self::modelPath(), $o),
            'connect' => fn (array $o) => \Displace\Infer\Model::connect('http://127.0.0.1:9', $o),
        ];
        // A valid value of each option a method may refuse.
        $samples = [
            'template_vars' => ['name' => 'Ana'],
            'special_tokens_in_messages' => true,
            'tools' => [['name' => 'f', 'description' => 'd', 'parameters' => ['type' => 'object']]],
            'tool_choice' => 'none',
        ];
        foreach ($calls as $method => $call) {
            $this->assertSame(1, preg_match('/@param array\{([^{}]*)\} \$options(?:(?!\*\/).)*\*\/\s*public (?:static )?function ' . $method . '\(/s', $stubs, $shape), "the stub of $method() has an \$options shape");
            preg_match_all('/(?:^|, )(\w+)\?:/', $shape[1], $keys);
            $declared = $keys[1];
            try {
                $call(['no_such_option' => 1]);
                $this->fail("$method() accepted an unknown option");
            } catch (\Displace\Infer\InferException $e) {
                $this->assertSame(1, preg_match('/\(known: ([a-z_, ]+)\)/', $e->getMessage(), $known), $e->getMessage());
            }
            $known = explode(', ', $known[1]);
            $this->assertSame([], array_values(array_diff($declared, $known)), "$method(): the stub declares options the extension does not know");
            foreach (array_diff($known, $declared) as $key) {
                $this->assertArrayHasKey($key, $samples, "$method(): option $key is missing from the stub's \$options shape");
                try {
                    $call([$key => $samples[$key]]);
                    $this->fail("$method() takes option $key, which its stub leaves out");
                } catch (\Displace\Infer\InferException $e) {
                    $this->assertStringContainsString("option \"$key\"", $e->getMessage(), $method);
                }
            }
        }
    }

    public function testStubsAreValidPhp(): void
    {
        exec(sprintf('%s -n -l %s 2>&1', escapeshellarg(PHP_BINARY), escapeshellarg(self::STUBS)), $out, $status);
        $this->assertSame(0, $status, implode("\n", $out));
    }
}
