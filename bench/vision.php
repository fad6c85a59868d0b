<?php
// Images in (issue 51): a chat about an image, in process, against llama.cpp's
// own llama-mtmd-cli built from the same llama.cpp (scripts/build-llama-mtmd-cli.sh)
// with the same model, projector, image, prompt, greedy sampling, threads and
// flash attention off (as the engine runs it); and a second question about the
// same image (its evaluation cached) against the first.
//
// llama-mtmd-cli's figure is its compute, from its own log: the projector's
// encoding ("mtmd batch encoding done in N ms") plus llama.cpp's prompt eval,
// eval and sampling times (--perf -lv 4); its model loading and warm-up (on,
// its default, which also warms the projector) are left out. The
// extension's figure is the wall time of chat() (rendering, tokenizing,
// encoding, evaluating, sampling), the model loaded before. Each side runs
// ROUNDS times, alternating, and the medians are compared.
//
//   php -d extension=… bench/vision.php MODEL MMPROJ MTMD_CLI [THREADS] [ROUNDS]

declare(strict_types=1);

require __DIR__ . '/support.php';
require __DIR__ . '/../tests-php/support/images.php';

use Displace\Infer\{Image, Model, Prompt};

use function Displace\Infer\Tests\Support\png;
use function Displace\Infer\Tests\Support\solid;

[$model_path, $mmproj, $cli] = [$argv[1] ?? '', $argv[2] ?? '', $argv[3] ?? ''];
if (!is_file($model_path) || !is_file($mmproj) || !is_executable($cli)) {
    fwrite(STDERR, "usage: php bench/vision.php MODEL MMPROJ LLAMA_MTMD_CLI [THREADS] [ROUNDS]\n");
    exit(2);
}
$threads = (int) ($argv[4] ?? 2);
$rounds = (int) ($argv[5] ?? 5);
$question = 'What colour is this image? Answer with one word.';
$n = 16;

$png = tempnam(sys_get_temp_dir(), 'vision-bench-') . '.png';
file_put_contents($png, png(28, 28, solid(28, 28, 255, 0, 0)));

/** llama-mtmd-cli's compute for one run, in ms, and its text. */
$cli_run = function () use ($cli, $model_path, $mmproj, $png, $question, $n, $threads): array {
    [$code, $out, $err] = run_command([
        $cli, '-m', $model_path, '--mmproj', $mmproj, '--image', $png, '-p', $question, '--temp', '0',
        '-n', (string) $n, '-t', (string) $threads, '-tb', (string) $threads, '-fa', 'off', '--jinja',
        '--perf', '-lv', '4',
    ]);
    $ms = fn (string $what) => preg_match("/$what\\s*=\\s*([0-9.]+) ms/", $err, $m) ? (float) $m[1] : NAN;
    $encode = preg_match('/mtmd batch encoding done in (\d+) ms/', $err, $m) ? (float) $m[1] : NAN;
    $prompt = $ms('prompt eval time');
    $sampling = preg_match('/sampling time\s*=\s*([0-9.]+) ms/', $err, $m) ? (float) $m[1] : 0.0;
    $compute = $encode + $prompt + $ms('(?<!prompt )eval time') + $sampling;
    if ($code !== 0 || is_nan($compute)) {
        fwrite(STDERR, "llama-mtmd-cli failed ($code):\n$err\n");
        exit(1);
    }
    return ['compute' => $compute, 'prompt' => $encode + $prompt, 'text' => trim($out)];
};

$model = Model::load($model_path, ['mmproj' => $mmproj, 'n_threads' => $threads]);
$image = Image::fromFile($png);
$ask = fn (Image $i, string $q, bool $cache) => $model->chat(Prompt::user([$i, $q]), $n, temperature: 0.0, options: ['cache_prompt' => $cache]);
$ask($image, $question, false); // warm: the first call allocates the context

$ours = $theirs = $ours_prompt = $theirs_prompt = [];
$text = $their_text = '';
for ($r = 0; $r < $rounds; $r++) {
    $t = $cli_run();
    $theirs[] = $t['compute'];
    $theirs_prompt[] = $t['prompt'];
    $their_text = $t['text'];
    [$ms, $response] = ms(fn () => $ask($image, $question, false));
    $ours[] = $ms;
    $ours_prompt[] = $response->timings()['prompt_ms'];
    $text = trim($response->text());
}

// The second question about an image against the first: a new image each
// round (a shade of red never seen before), so that the first is uncached.
$first = $second = [];
for ($r = 0; $r < $rounds; $r++) {
    $shade = Image::fromPixels(28, 28, solid(28, 28, 250 - $r, 0, 0));
    [$a] = ms(fn () => $ask($shade, $question, true));
    [$b, $again] = ms(fn () => $ask($shade, 'Name the colour of this image in one word.', true));
    $first[] = $a;
    $second[] = $b;
}

printf("model %s, projector %s, %d threads, %d rounds, %d tokens\n", basename($model_path), basename($mmproj), $threads, $rounds, $n);
printf("same text as llama-mtmd-cli: %s (%s)\n", $text === $their_text ? 'yes' : 'NO', json_encode($text));
printf("prompt (image encoded and evaluated, with the text): infer %.1f ms, llama-mtmd-cli %.1f ms: %.3f×\n",
    median($ours_prompt), median($theirs_prompt), median($ours_prompt) / median($theirs_prompt));
printf("whole call: infer %.1f ms, llama-mtmd-cli %.1f ms (compute, loading left out): %.3f×\n",
    median($ours), median($theirs), median($ours) / median($theirs));
printf("second question about the same image: %.1f ms against %.1f ms for the first: %.3f× (%d of %d prompt tokens cached)\n",
    median($second), median($first), median($second) / median($first), $again->cachedTokens(), $again->promptTokens());
unlink($png);
