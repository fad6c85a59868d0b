<?php
// What a model of fixed threads costs after its call has returned: its pool
// polls while it evaluates (as llama.cpp's tools do) and sleeps once the
// call returns. Measured in one run, for the default (threads shared, pools
// that never poll) and for n_threads set:
//
//   php -d extension=target/release/libinfer.so bench/idle_pool.php MODEL [THREADS]
//
// 1. A fixed piece of PHP work (200,000 md5 calls) right after a call, against
//    the same work after a 0.4 s pause.
// 2. A second model's call right after the first model's, against the same
//    call after a 0.4 s pause (an application with two models: an extractor
//    and a classifier, a chat model and an embedder).
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\Model;

$model_path = $argv[1] ?? '';
$threads = (int) ($argv[2] ?? 2);
if (!is_file($model_path)) {
    fwrite(STDERR, "usage: php bench/idle_pool.php MODEL [THREADS]\n");
    exit(2);
}
[$system, $user, $schema, $prompt] = spec_extraction();
$work = function (): float {
    $t = hrtime(true);
    $x = '';
    for ($i = 0; $i < 200000; $i++) {
        $x = md5($x . $i);
    }
    return (hrtime(true) - $t) / 1e6;
};
echo "| models loaded with | PHP work right after a call / after a pause | a second model's call right after / after a pause |\n|---|--:|--:|\n";
foreach (['default (threads shared)' => [], "n_threads $threads" => ['n_threads' => $threads]] as $label => $options) {
    [$a, $b] = [Model::load($model_path, $options), Model::load($model_path, $options)];
    $call = fn (Model $m) => $m->chat($prompt, maxTokens: 32, options: ['schema' => $schema]);
    $call($a);
    $call($b);
    [$after, $rested, $second, $second_rested] = [[], [], [], []];
    for ($i = 0; $i < 6; $i++) {
        $call($a);
        $after[] = $work();
        $call($a);
        usleep(400000);
        $rested[] = $work();
        $call($a);
        $second[] = ms(fn () => $call($b))[0];
        $call($a);
        usleep(400000);
        $second_rested[] = ms(fn () => $call($b))[0];
    }
    printf("| %s | %.1f / %.1f ms = %.2f× | %.1f / %.1f ms = %.2f× |\n", $label,
        median($after), median($rested), median($after) / median($rested),
        median($second), median($second_rested), median($second) / median($second_rested));
    unset($a, $b);
}
