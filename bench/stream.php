<?php
// Streaming against chat() in the same run: same model, prompts, arguments
// and threads.
//
//   php -d extension=target/release/libinfer.so bench/stream.php MODEL [RUNS]
//
// 1. Time to the first piece of stream(), against chat() with maxTokens 1
//    (the prompt's evaluation and one token), both without the prompt cache.
// 2. Per-token cost: a reply of 128 tokens read through a Stream (each piece
//    appended to a string) against chat() of the same 128 tokens; the two
//    alternate, and each side's best and median of RUNS are compared.
// 3. How long after cancel() generation really stops: tokens generated after
//    the call (the response's count against the pieces seen), and the time
//    cancel() takes against one token.
// 4. How long after the deadline (option `timeout`) a stream's loop ends, in
//    generated tokens (generation) and prompt batches (prompt evaluation).
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

require __DIR__ . '/../examples/extraction.php';

if ($argc < 2) {
    fwrite(STDERR, "usage: php -d extension=... bench/stream.php MODEL [RUNS]\n");
    exit(2);
}
$model = Model::load($argv[1]);
$runs = (int) ($argv[2] ?? 7);
$off = ['cache_prompt' => false];

function fail(string $why): never
{
    fwrite(STDERR, "$why\n");
    exit(1);
}

$short = Prompt::user('What is the capital of France?');
$extraction = Prompt::system(EXTRACTION_INSTRUCTIONS . EXTRACTION_EXAMPLES)->withUser('Tom, a 52-year-old baker from Leeds.');
$story = Prompt::user('Write a very long story about a dragon who learns to read.');
$long = Prompt::user(str_repeat('The library opens at nine and closes at five. Books can be renewed online. ', 150));
$model->chat($short, maxTokens: 8); // warm up

echo "## Time to first piece (no prompt cache; best and median of $runs)\n\n";
printf("%-24s %7s %16s %16s %8s\n", 'prompt', 'tokens', 'chat(max 1) ms', 'first piece ms', 'ratio');
foreach (['short question' => $short, 'extraction (few-shot)' => $extraction] as $name => $prompt) {
    [$chatT, $firstT] = [[], []];
    for ($i = 0; $i < $runs; $i++) {
        [$t, $r] = ms(fn () => $model->chat($prompt, maxTokens: 1, options: $off));
        $chatT[] = $t;
        $start = hrtime(true);
        $stream = $model->stream($prompt, maxTokens: 64, options: $off);
        foreach ($stream as $piece) {
            $firstT[] = (hrtime(true) - $start) / 1e6;
            break;
        }
        unset($stream);
    }
    printf("%-24s %7d %8.1f / %5.1f %8.1f / %5.1f %7.3fx\n", $name, $r->promptTokens(), min($chatT), median($chatT),
        min($firstT), median($firstT), median($firstT) / median($chatT));
}

echo "\n## Per-token cost: 128 tokens, stream() against chat() (prompt cached; alternating, $runs runs each)\n\n";
[$chatT, $streamT] = [[], []];
$expected = $model->chat($story, maxTokens: 128);
if ($expected->tokensGenerated() !== 128) {
    fail('the story ended before 128 tokens: pick another prompt');
}
for ($i = 0; $i < $runs; $i++) {
    [$t, $r] = ms(fn () => $model->chat($story, maxTokens: 128));
    $chatT[] = $t;
    [$t, $text] = ms(function () use ($model, $story): string {
        $text = '';
        foreach ($model->stream($story, maxTokens: 128) as $piece) {
            $text .= $piece;
        }
        return $text;
    });
    $streamT[] = $t;
    if ($text !== $expected->text()) {
        fail('the stream differs from chat()');
    }
}
printf("%-10s %10s %10s %14s\n", '', 'best ms', 'median ms', 'ms per token');
printf("%-10s %10.1f %10.1f %14.3f\n", 'chat()', min($chatT), median($chatT), median($chatT) / 128);
printf("%-10s %10.1f %10.1f %14.3f\n", 'stream()', min($streamT), median($streamT), median($streamT) / 128);
printf("stream / chat: %.3fx (best), %.3fx (median); goal <= 1.02x\n", min($streamT) / min($chatT), median($streamT) / median($chatT));
$perToken = median($chatT) / 128;

echo "\n## cancel(): when generation really stops ($runs runs, cancelled after 5 to 35 pieces)\n\n";
[$after, $cancelT] = [[], []];
for ($i = 0; $i < $runs; $i++) {
    $stream = $model->stream($story, maxTokens: 128);
    $seen = 0;
    $at = 5 + 5 * $i;
    foreach ($stream as $piece) {
        if (++$seen === $at) {
            [$t] = ms(fn () => $stream->cancel());
            $cancelT[] = $t;
        }
    }
    $response = $stream->response();
    if ($response->finishReason() !== 'cancelled') {
        fail("a run ended with '{$response->finishReason()}'");
    }
    $after[] = $response->tokensGenerated() - $at;
}
printf("tokens generated after cancel(): max %d (each piece here is one token)\n", max($after));
printf("time cancel() takes: max %.3f ms = %.3f of one token (%.2f ms)\n", max($cancelT), max($cancelT) / $perToken, $perToken);

echo "\n## Deadline of a stream (option timeout; $runs runs each)\n\n";
[$tPrompt, $r] = ms(fn () => $model->chat($long, maxTokens: 1, nCtx: 4096, options: $off));
$perBatch = $tPrompt / ceil($r->promptTokens() / 512);
printf("%-12s %-9s %14s %14s %12s\n", 'phase', 'deadline', 'overshoot p50', 'overshoot max', 'max / unit');
foreach ([[$story, [0.1, 0.5], 'generation', $perToken], [$long, [0.05, 0.3], 'prompt', $perBatch]] as [$prompt, $deadlines, $phase, $unit]) {
    foreach ($deadlines as $d) {
        $over = [];
        for ($i = 0; $i < $runs; $i++) {
            [$t, $stream] = ms(function () use ($model, $prompt, $d, $off) {
                $stream = $model->stream($prompt, maxTokens: 4000, nCtx: 4096, options: $off + ['timeout' => $d]);
                foreach ($stream as $piece) {
                }
                return $stream;
            });
            if ($stream->finishReason() !== 'timeout') {
                fail("a run ended with '{$stream->finishReason()}' before its deadline of $d s");
            }
            if ($phase === 'prompt' && $stream->response()->tokensGenerated() > 0) {
                fail("the prompt was evaluated before the deadline of $d s: shorten it");
            }
            $over[] = $t - $d * 1000;
        }
        printf("%-12s %-9s %11.2f ms %11.2f ms %11.2fx\n", $phase, "{$d} s", median($over), max($over), max($over) / $unit);
    }
}
printf("\n'max / unit': the worst overshoot in generated tokens (generation) or prompt batches of 512 (prompt); goal <= 1.\n");
