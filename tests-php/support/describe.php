<?php

declare(strict_types=1);

/**
 * A comparable description of classes through Reflection: used by StubsTest
 * on the loaded extension and, in a process without it, on php-stubs/infer.php.
 *
 * @param list<class-string> $classes
 * @return array<string, mixed>
 */
function infer_describe_api(array $classes): array
{
    $out = [];
    sort($classes);
    foreach ($classes as $class) {
        $r = new ReflectionClass($class);
        $methods = [];
        foreach ($r->getMethods() as $m) {
            if ($m->getDeclaringClass()->getName() !== $class) {
                continue;
            }
            $params = [];
            foreach ($m->getParameters() as $p) {
                $params[] = [
                    'name' => $p->getName(),
                    'type' => (string) $p->getType(),
                    'optional' => $p->isOptional(),
                    'default' => $p->isDefaultValueAvailable() ? var_export($p->getDefaultValue(), true) : null,
                    'variadic' => $p->isVariadic(),
                    'byRef' => $p->isPassedByReference(),
                ];
            }
            $methods[$m->getName()] = [
                'static' => $m->isStatic(),
                'public' => $m->isPublic(),
                'final' => $m->isFinal(),
                'return' => (string) $m->getReturnType(),
                'params' => $params,
            ];
        }
        ksort($methods);
        $out[$class] = [
            'final' => $r->isFinal(),
            'abstract' => $r->isAbstract(),
            'parent' => $r->getParentClass() ? $r->getParentClass()->getName() : null,
            'interfaces' => array_values(array_diff($r->getInterfaceNames(), ['Stringable', 'Throwable'])),
            'methods' => $methods,
        ];
    }
    return $out;
}

/** @return list<class-string> the classes of namespace Displace\Infer currently declared */
function infer_declared_classes(): array
{
    return array_values(array_filter(
        get_declared_classes(),
        fn (string $c) => str_starts_with($c, 'Displace\\Infer\\') && !str_starts_with($c, 'Displace\\Infer\\Tests\\'),
    ));
}

// Run as a script: describe the stubs (the extension must not be loaded).
if (PHP_SAPI === 'cli' && realpath($_SERVER['SCRIPT_FILENAME'] ?? '') === __FILE__) {
    require $argv[1];
    echo json_encode(infer_describe_api(infer_declared_classes()), JSON_PRETTY_PRINT | JSON_THROW_ON_ERROR);
}
