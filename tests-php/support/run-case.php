<?php
// Runs one case of bad-inputs.php in this process and writes the outcome as
// JSON to the file named by the second argument: the exception's class and
// message (or 'ok'), the seconds it took and the peak PHP memory. Used by
// BadInputTest, which starts one process per case.

declare(strict_types=1);

[, $name, $out] = $argv;
$scratch = sys_get_temp_dir() . '/infer-case-' . getmypid();
@mkdir($scratch);
putenv("INFER_SCRATCH=$scratch");
$cases = require __DIR__ . '/bad-inputs.php';
$started = hrtime(true);
try {
    $cases[$name][0]();
    $result = ['class' => 'ok', 'message' => ''];
} catch (Throwable $e) {
    $result = ['class' => get_class($e), 'message' => $e->getMessage()];
}
$result['seconds'] = (hrtime(true) - $started) / 1e9;
$result['peak_memory'] = memory_get_peak_usage();
file_put_contents($out, json_encode($result, JSON_INVALID_UTF8_SUBSTITUTE | JSON_THROW_ON_ERROR));
foreach (glob("$scratch/{,.}*", GLOB_BRACE) ?: [] as $path) {
    if (is_link($path) || is_file($path)) {
        unlink($path);
    }
}
@rmdir($scratch);
