<?php
// Semantic search with the default embedding model (all-MiniLM-L6-v2, `make
// embedding-model`), then reranking of the best hits with a reranker.
//
//   php -d extension=target/release/libinfer.so examples/semantic-search.php ["your question"]
//
// The documents are embedded once with embedMany() (in a real application:
// stored, e.g. as $e->packed() bytes, and read back with
// Embedding::fromPacked()); the query is embedded and compared by cosine;
// then RerankModel reads query and document together for a finer order. Any
// instruct model can rerank (here the default chat model, asked yes or no,
// which at 135M parameters is a weak judge: it gets easy queries like the
// default one right and harder ones wrong); a cross-encoder GGUF
// (bge-reranker) or a larger instruct model is the choice for real use:
// RerankModel::load('bge-reranker-v2-m3.gguf').
declare(strict_types=1);

use Displace\Infer\{Embedding, Model, RerankModel};

$root = dirname(__DIR__);
$embedder = Model::load(getenv('INFER_EMBEDDING_MODEL') ?: "$root/models/all-MiniLM-L6-v2.F16.gguf", ['embedding' => true]);
$reranker = RerankModel::load(getenv('INFER_MODEL') ?: "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf");

$documents = [
    'The library opens at nine in the morning and closes at five in the afternoon.',
    'Books can be renewed online, by phone or at the front desk.',
    'Overdue books cost ten cents per day.',
    'The museum has a new exhibition of modern sculpture.',
    'Children under twelve need a parent to sign up for a library card.',
    'The bakery on Main Street sells fresh bread every morning.',
    'Group study rooms can be booked one week ahead, for two hours at most.',
    'The train to the airport leaves every fifteen minutes.',
];
$query = $argv[1] ?? 'What does a late book cost?';

// 1. Embed the documents (once) and the query; rank by cosine similarity.
$stored = array_map(fn (Embedding $e): string => $e->packed(), $embedder->embedMany($documents));
$q = $embedder->embed($query);
$similar = [];
foreach ($stored as $i => $bytes) {
    $similar[$i] = $q->cosineSimilarity(Embedding::fromPacked($bytes));
}
arsort($similar);
$hits = array_slice($similar, 0, 4, true);

echo "Query: $query\n\nBy embedding (cosine):\n";
foreach ($hits as $i => $cosine) {
    printf("  %.3f  %s\n", $cosine, $documents[$i]);
}

// 2. Rerank the hits: the reranker reads query and document together.
$candidates = array_keys($hits);
echo "\nReranked:\n";
foreach ($reranker->rank($query, array_map(fn (int $i): string => $documents[$i], $candidates)) as $r) {
    printf("  %.3f  %s\n", $r['score'], $documents[$candidates[$r['index']]]);
}
