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

    public function testStubsAreValidPhp(): void
    {
        exec(sprintf('%s -n -l %s 2>&1', escapeshellarg(PHP_BINARY), escapeshellarg(self::STUBS)), $out, $status);
        $this->assertSame(0, $status, implode("\n", $out));
    }
}
