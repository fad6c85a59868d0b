<?php
// Helpers the PHP benchmarks share.
declare(strict_types=1);

/** The median of $xs (the mean of the middle two for an even count). */
function median(array $xs): float
{
    sort($xs);
    $n = count($xs);
    return $n % 2 ? $xs[intdiv($n, 2)] : ($xs[$n / 2 - 1] + $xs[$n / 2]) / 2;
}

/**
 * Run $fn once: [its wall time in milliseconds, what it returned].
 *
 * @return array{float, mixed}
 */
function ms(callable $fn): array
{
    $t = hrtime(true);
    $r = $fn();
    return [(hrtime(true) - $t) / 1e6, $r];
}
