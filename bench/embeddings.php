<?php
// Embeddings and reranking against their baselines in the same run (issue
// 12): embedMany() on 1,000 sentences against llama.cpp's own
// llama-embedding (built from the same sources by bench/build-llama-tools.sh,
// same model, same threads, its batch size swept for its best) and against a
// loop of embed(); rank() of 50 documents against 50 score() calls, for a
// cross-encoder and for the yes/no judgement of an instruct model.
//
//   php -d extension=target/release/libinfer.so bench/embeddings.php EMBEDDING_MODEL RANK_MODEL CHAT_MODEL TOOLS_DIR [THREADS]
//
// llama-embedding's time is its wall time for the 1,000 sentences minus its
// wall time for one (loading the model, starting up); it also writes the
// vectors out (as JSON arrays, to /dev/null), which the extension does not.
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, RerankModel};

if ($argc < 5) {
    fwrite(STDERR, "usage: php -d extension=... bench/embeddings.php EMBEDDING_MODEL RANK_MODEL CHAT_MODEL TOOLS_DIR [THREADS]\n");
    exit(2);
}
[, $embeddingPath, $rankPath, $chatPath, $tools] = $argv;
$threads = (int) ($argv[5] ?? 2);
const RUNS = 3;

/** 1,000 different sentences of 12 to 17 tokens, the same every run. */
function sentences(int $n): array
{
    $s = ['The cat', 'A young engineer', 'My neighbour', 'The old library', 'A small company', 'The city council',
        'Our new teacher', 'The weather service', 'A famous chef', 'The football team'];
    $v = ['announced', 'built', 'painted', 'described', 'cancelled', 'repaired', 'discovered', 'visited',
        'recommended', 'questioned'];
    $o = ['a bridge over the river', 'the annual budget', 'an unusual recipe for bread', 'the results of the election',
        'a quiet house near the park', 'three new electric buses', 'the history of the region',
        'a plan to plant more trees', 'the broken heating system', 'an exhibition of modern art'];
    $t = ['yesterday.', 'last week.', 'on Monday morning.', 'after a long discussion.', 'despite the rain.'];
    $out = [];
    for ($i = 0; $i < $n; $i++) {
        $out[] = $s[$i % 10] . ' ' . $v[intdiv($i, 10) % 10] . ' ' . $o[intdiv($i, 100) % 10] . ' ' . $t[$i % 5];
    }
    return $out;
}

function best(callable $fn): float
{
    $times = [];
    for ($i = 0; $i < RUNS; $i++) {
        [$t] = ms($fn);
        $times[] = $t;
    }
    return min($times);
}

$texts = sentences(1000);
$model = Model::load($embeddingPath, ['embedding' => true, 'n_threads' => $threads]);
$model->embedMany(array_slice($texts, 0, 50)); // warm up

echo "## embedMany() on 1,000 sentences (all-MiniLM-L6-v2 F16, $threads threads, best of " . RUNS . ")\n\n";
$many = best(fn () => $model->embedMany($texts));
$loop = best(function () use ($model, $texts) {
    foreach ($texts as $text) {
        $model->embed($text);
    }
});

$dir = sys_get_temp_dir() . '/infer-bench-embed-' . getmypid();
@mkdir($dir);
file_put_contents("$dir/all.txt", implode("\n", $texts) . "\n");
file_put_contents("$dir/one.txt", $texts[0] . "\n");
$tool = static function (string $file, int $batch) use ($tools, $embeddingPath, $threads): float {
    $cmd = sprintf('%s -m %s -f %s -t %d -c %d -b %d -ub %d --embd-output-format array > /dev/null 2>&1',
        escapeshellarg("$tools/llama-embedding"), escapeshellarg($embeddingPath), escapeshellarg($file), $threads, $batch, $batch, $batch);
    return best(function () use ($cmd) {
        exec($cmd, $out, $status);
        if ($status !== 0) {
            fwrite(STDERR, "llama-embedding failed: $cmd\n");
            exit(1);
        }
    });
};
$baseline = [];
foreach ([256, 512, 1024, 2048] as $batch) { // 128 trips an assertion of the tool
    $baseline[$batch] = $tool("$dir/all.txt", $batch) - $tool("$dir/one.txt", $batch);
}
array_map('unlink', glob("$dir/*"));
rmdir($dir);
$bestBatch = array_search(min($baseline), $baseline, true);

printf("%-44s %10s %12s\n", '', 'ms', 'texts/s');
foreach ($baseline as $batch => $t) {
    printf("%-44s %10.0f %12.0f\n", "llama-embedding -c/-b/-ub $batch (minus load)", $t, 1000 / $t * 1000);
}
printf("%-44s %10.0f %12.0f\n", 'embedMany()', $many, 1000 / $many * 1000);
printf("%-44s %10.0f %12.0f\n", 'embed() x 1000', $loop, 1000 / $loop * 1000);
printf("\nembedMany / llama-embedding (best, -b %d): %.2fx the throughput (goal >= 0.95x)\n", $bestBatch, $baseline[$bestBatch] / $many);
printf("embedMany / embed() loop: %.2fx the throughput (goal >= 3x)\n", $loop / $many);

echo "\n## rank() of 50 documents against 50 score() calls (best of " . RUNS . ")\n\n";
$documents = array_slice(sentences(1000), 0, 50);
$query = 'Which council cancelled the budget?';
printf("%-40s %12s %14s %8s\n", 'model', 'rank() ms', '50 x score() ms', 'ratio');
foreach (['cross-encoder (test MiniLM head)' => $rankPath, 'yes/no judge (SmolLM2-135M)' => $chatPath] as $name => $path) {
    $reranker = RerankModel::load($path, ['n_threads' => $threads]);
    $reranker->rank($query, array_slice($documents, 0, 4)); // warm up
    $rank = best(fn () => $reranker->rank($query, $documents));
    $scores = best(function () use ($reranker, $query, $documents) {
        foreach ($documents as $d) {
            $reranker->score($query, $d);
        }
    });
    printf("%-40s %12.0f %14.0f %7.2fx\n", $name, $rank, $scores, $scores / $rank);
}
