<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Embedding;
use Displace\Infer\InferenceException;
use Displace\Infer\InferException;
use Displace\Infer\Model;
use Displace\Infer\ModelLoadException;
use Displace\Infer\RerankModel;

/**
 * Model::embed() / embedMany() and Embedding, on all-MiniLM-L6-v2 (converted
 * by scripts/fetch-embedding-model.sh): the vectors agree with an
 * independent float64 forward pass of the same weights
 * (scripts/embedding_reference.py, which never reads the GGUF nor runs
 * llama.cpp), embedMany() agrees with embed() one text at a time, and every
 * bad input ends in a clear exception.
 */
final class EmbeddingTest extends InferTestCase
{
    private static ?Model $embedder = null;

    private const SENTENCES = [
        'A man is eating food.',
        'A man is eating a piece of bread.',
        'The girl is carrying a baby.',
        'A man is riding a horse.',
        'Café prices in Zürich rose 12% in 2024; naïve estimates missed it.',
        'Hi',
        'The library opens at nine and closes at five. Books can be renewed online, by phone or at the desk, '
        . 'and overdue books cost ten cents a day. Children under twelve need a parent to sign up for a card. '
        . 'The reading room is quiet; group study rooms can be booked a week ahead, for two hours at most.',
    ];

    private static function embedder(): Model
    {
        return self::$embedder ??= Model::load(self::embeddingModelPath(), ['embedding' => true]);
    }

    private static function cosine(array $a, array $b): float
    {
        $dot = $na = $nb = 0.0;
        foreach ($a as $i => $x) {
            $dot += $x * $b[$i];
            $na += $x * $x;
            $nb += $b[$i] * $b[$i];
        }
        return $dot / sqrt($na * $nb);
    }

    private static function maxAbsDiff(array $a, array $b): float
    {
        return max(array_map(static fn ($x, $y) => abs($x - $y), $a, $b));
    }

    /** @group engine */
    public function testVectorsAgreeWithAnIndependentFloat64ForwardPass(): void
    {
        $reference = EmbeddingModel::reference(['texts' => self::SENTENCES]);
        $vectors = self::embedder()->embedMany(self::SENTENCES);
        $this->assertCount(count(self::SENTENCES), $vectors);
        foreach (self::SENTENCES as $i => $text) {
            $ours = $vectors[$i]->vector();
            $this->assertSame(384, $vectors[$i]->dimensions());
            $this->assertCount(count($reference['tokens'][$i]), range(1, self::embedder()->countTokens($text) + 2), "tokens of \"$text\": the text and [CLS], [SEP]");
            $this->assertGreaterThanOrEqual(0.9999, self::cosine($ours, $reference['vectors'][$i]), "cosine for \"$text\"");
            $this->assertLessThanOrEqual(5e-3, self::maxAbsDiff($ours, $reference['vectors'][$i]), "largest difference for \"$text\"");
        }
    }

    /** @group engine */
    public function testRelatedSentencesAreCloserThanUnrelatedOnes(): void
    {
        $pairs = [
            ['A man is eating food.', 'A man is eating a piece of bread.'],
            ['The cat sleeps on the sofa.', 'A kitten is napping on the couch.'],
            ['How do I reset my password?', 'I forgot my password and cannot log in.'],
            ['The stock market fell sharply today.', 'Shares dropped steeply this afternoon.'],
        ];
        $unrelated = [
            ['A man is eating food.', 'Shares dropped steeply this afternoon.'],
            ['The cat sleeps on the sofa.', 'I forgot my password and cannot log in.'],
            ['How do I reset my password?', 'A man is eating a piece of bread.'],
            ['The stock market fell sharply today.', 'A kitten is napping on the couch.'],
        ];
        $sim = static function (array $pair): float {
            [$a, $b] = self::embedder()->embedMany($pair);
            return $a->cosineSimilarity($b);
        };
        $lowestRelated = min(array_map($sim, $pairs));
        $highestUnrelated = max(array_map($sim, $unrelated));
        $this->assertGreaterThan($highestUnrelated, $lowestRelated);
    }

    /** @group engine */
    public function testEmbedManyGivesTheVectorsOfEmbedOneTextAtATime(): void
    {
        $texts = [];
        for ($i = 0; $i < 90; $i++) {
            $texts[] = self::SENTENCES[$i % count(self::SENTENCES)] . str_repeat(" more words $i", $i % 9);
        }
        $many = self::embedder()->embedMany($texts);
        foreach ($texts as $i => $text) {
            $one = self::embedder()->embed($text)->vector();
            $this->assertGreaterThanOrEqual(0.99999, self::cosine($one, $many[$i]->vector()), "text $i");
            $this->assertLessThanOrEqual(1e-3, self::maxAbsDiff($one, $many[$i]->vector()), "text $i");
        }
    }

    public function testEqualTextsGetEqualVectorsInOrder(): void
    {
        $many = self::embedder()->embedMany(['alpha', 'beta', 'alpha']);
        $this->assertGreaterThanOrEqual(0.99999, $many[0]->cosineSimilarity($many[2]));
        $this->assertLessThan(0.99, $many[0]->cosineSimilarity($many[1]));
        $this->assertSame([], self::embedder()->embedMany([]));
    }

    /** @group slow */
    public function testTenThousandTextsAreEmbedded(): void
    {
        $texts = array_map(static fn (int $i): string => "item $i", range(1, 10000));
        $many = self::embedder()->embedMany($texts);
        $this->assertCount(10000, $many);
        $this->assertGreaterThanOrEqual(0.99999, $many[9999]->cosineSimilarity(self::embedder()->embed('item 10000')));
    }

    public function testPackedIsLittleEndianFloat32AndReadsBack(): void
    {
        $e = self::embedder()->embed('A man is eating food.');
        $this->assertSame(pack('g*', ...$e->vector()), $e->packed());
        $this->assertSame(384 * 4, strlen($e->packed()));
        $this->assertSame($e->vector(), Embedding::fromPacked($e->packed())->vector());
        $this->assertSame($e->packed(), Embedding::fromVector($e->vector())->packed());
    }

    public function testNormNormalizeAndCosineAgreeWithAPhpComputation(): void
    {
        [$a, $b] = self::embedder()->embedMany(['A man is eating food.', 'A man is riding a horse.']);
        $va = $a->vector();
        $this->assertEqualsWithDelta(sqrt(array_sum(array_map(static fn ($x) => $x * $x, $va))), $a->norm(), 1e-9);
        $unit = $a->normalize();
        $this->assertEqualsWithDelta(1.0, $unit->norm(), 1e-6);
        $this->assertEqualsWithDelta(1.0, $a->cosineSimilarity($unit), 1e-6);
        $this->assertEqualsWithDelta(self::cosine($va, $b->vector()), $a->cosineSimilarity($b), 1e-12);
        $this->assertEqualsWithDelta($a->cosineSimilarity($b), $b->cosineSimilarity($a), 1e-15);

        $zero = Embedding::fromVector([0, 0, 0]);
        $this->assertSame([0.0, 0.0, 0.0], $zero->normalize()->vector(), 'a zero vector is returned unchanged');
        $this->assertSame(0.0, $zero->norm());
        $this->assertSame(0.0, $zero->cosineSimilarity(Embedding::fromVector([1, 2, 3])));
        $this->assertEqualsWithDelta(-1.0, Embedding::fromVector([1, 2])->cosineSimilarity(Embedding::fromVector([-2, -4])), 1e-12);
    }

    public function testComparingEmbeddingsOfOtherSizesThrows(): void
    {
        $e = self::embedder()->embed('x');
        $this->assertThrows(InferenceException::class, 'cannot compare embeddings of 384 and 2 dimensions',
            fn () => $e->cosineSimilarity(Embedding::fromVector([1.0, 2.0])));
    }

    /** @return array<string, array{callable(): mixed, string}> */
    public static function badStoredVectors(): array
    {
        return [
            'not a list' => [fn () => Embedding::fromVector(['a' => 1.0]), 'values must be a list'],
            'a string' => [fn () => Embedding::fromVector([1.0, 'x']), 'values[1] must be a finite number that fits a float32, got string'],
            'infinite' => [fn () => Embedding::fromVector([INF]), 'values[0] must be a finite number'],
            'too large for float32' => [fn () => Embedding::fromVector([1e300]), 'values[0] must be a finite number that fits a float32'],
            'packed of odd length' => [fn () => Embedding::fromPacked('abcde'), 'packed embedding is 5 bytes, not a whole number of float32 values'],
            'packed NaN' => [fn () => Embedding::fromPacked(pack('g*', 1.0, NAN)), 'not a finite number at index 1'],
        ];
    }

    /** @dataProvider badStoredVectors */
    public function testBadStoredVectorsThrow(callable $make, string $message): void
    {
        $this->assertThrows(InferenceException::class, $message, $make);
    }

    public function testThePoolingOptionChoosesHowTokensBecomeOneVector(): void
    {
        $path = EmbeddingModel::path();
        $text = 'A man is eating food.';
        $default = self::embedder()->embed($text);
        $mean = Model::load($path, ['embedding' => true, 'pooling' => 'mean'])->embed($text);
        $cls = Model::load($path, ['embedding' => true, 'pooling' => 'cls'])->embed($text);
        $last = Model::load($path, ['embedding' => true, 'pooling' => 'last'])->embed($text);
        $this->assertSame($default->vector(), $mean->vector(), 'the GGUF declares mean pooling');
        $this->assertLessThan(0.99, $cls->cosineSimilarity($mean));
        $this->assertLessThan(0.99, $last->cosineSimilarity($mean));
        $this->assertLessThan(0.99, $last->cosineSimilarity($cls));

        $none = Model::load($path, ['embedding' => true, 'pooling' => 'none']);
        $this->assertThrows(InferenceException::class, "the model was loaded with 'pooling' => 'none', which gives a vector per token", fn () => $none->embed($text));
    }

    /** @group engine */
    public function testADecoderModelEmbedsWithMeanPoolingAndStillChats(): void
    {
        $model = Model::load(self::modelPath(), ['embedding' => true, 'pooling' => 'mean']);
        $texts = ['The cat sits on the mat.', 'A dog runs in the park.', 'Stock markets fell sharply today.'];
        $many = $model->embedMany($texts);
        $this->assertSame(self::gguf()['llama.embedding_length'], $many[0]->dimensions());
        foreach ($texts as $i => $text) {
            $this->assertGreaterThanOrEqual(0.999, $model->embed($text)->cosineSimilarity($many[$i]), "text $i");
        }
        $prompt = \Displace\Infer\Prompt::user('Name a fruit.');
        $this->assertSame(self::model()->chat($prompt, maxTokens: 8)->text(), $model->chat($prompt, maxTokens: 8)->text());
    }

    /** @return array<string, array{callable(Model): mixed, string}> */
    public static function badEmbeds(): array
    {
        $long = str_repeat('word ', 600);
        return [
            'empty text' => [fn (Model $m) => $m->embed(''), 'text is empty'],
            'not UTF-8' => [fn (Model $m) => $m->embed("a\xff"), 'text is not valid UTF-8 (invalid byte at offset 1)'],
            'NUL byte' => [fn (Model $m) => $m->embed("a\0b"), 'text contains a NUL byte at offset 1'],
            'over the context' => [fn (Model $m) => $m->embed($long), "text is 602 tokens, more than the model's context of 512"],
            'list with an empty text' => [fn (Model $m) => $m->embedMany(['ok', '']), 'texts[1]: text is empty'],
            'list over the context' => [fn (Model $m) => $m->embedMany(['ok', 'fine', $long]), "texts[2]: text is 602 tokens, more than the model's context of 512"],
            'list with NUL' => [fn (Model $m) => $m->embedMany(['ok', "a\0"]), 'texts[1] contains a NUL byte at offset 1'],
            'list not UTF-8' => [fn (Model $m) => $m->embedMany(["\xff"]), 'texts[0] is not valid UTF-8'],
            'list with a non-string' => [fn (Model $m) => $m->embedMany(['ok', 3]), 'texts[1] must be a string, got int'],
            'not a list' => [fn (Model $m) => $m->embedMany(['a' => 'x']), 'texts must be a list'],
        ];
    }

    /** @dataProvider badEmbeds */
    public function testBadTextsThrowClearly(callable $call, string $message): void
    {
        $this->assertThrows(InferenceException::class, $message, fn () => $call(self::embedder()));
    }

    public function testAModelNotLoadedForEmbeddingsOrClosedRefuses(): void
    {
        $this->assertThrows(InferenceException::class, "the model was not loaded for embeddings: load it with ['embedding' => true]",
            fn () => self::model()->embed('x'));
        $this->assertThrows(InferenceException::class, 'the model was not loaded for embeddings',
            fn () => self::model()->embedMany(['x']));
        $closed = Model::load(EmbeddingModel::path(), ['embedding' => true]);
        $closed->close();
        $this->assertThrows(InferenceException::class, 'model has been closed', fn () => $closed->embed('x'));
        $this->assertThrows(InferenceException::class, 'model has been closed', fn () => $closed->embedMany(['x']));
    }

    /** @return array<string, array{array<string, mixed>, string}> */
    public static function badLoadOptions(): array
    {
        return [
            'embedding not a bool' => [['embedding' => 1], 'option "embedding" must be a bool, got int'],
            'unknown pooling' => [['embedding' => true, 'pooling' => 'avg'], "option \"pooling\" must be one of 'none', 'mean', 'cls', 'last', 'rank', got string"],
            'pooling not a string' => [['embedding' => true, 'pooling' => 1], 'option "pooling" must be one of'],
            'pooling without embedding' => [['pooling' => 'mean'], "option \"pooling\" applies to embeddings only: add 'embedding' => true"],
            'rank pooling without a head' => [['embedding' => true, 'pooling' => 'rank'], "pooling 'rank' needs a cross-encoder, and " . EmbeddingModel::path() . ' declares no rank pooling'],
        ];
    }

    /** @dataProvider badLoadOptions */
    public function testBadEmbeddingOptionsThrowNamingTheKey(array $options, string $message): void
    {
        $this->assertThrows(ModelLoadException::class, $message, fn () => Model::load(EmbeddingModel::path(), $options));
    }

    public function testACrossEncoderLoadedAsAModelEmbedsToItsScore(): void
    {
        // Rank pooling (declared by the GGUF, or asked for) gives the head's
        // output: one number, the raw score RerankModel puts through a sigmoid.
        $pair = ['What is the capital of France?', 'The capital of France is Paris.'];
        $reference = EmbeddingModel::reference(['pairs' => [$pair], 'seed' => EmbeddingModel::RANK_SEED], ['--rank']);
        foreach ([[], ['pooling' => 'rank']] as $extra) {
            $model = Model::load(EmbeddingModel::rankTestPath(), ['embedding' => true] + $extra);
            $raw = $model->embed($pair[0])->vector();
            $this->assertCount(1, $raw);
        }
        $this->assertEqualsWithDelta($reference['probabilities'][0], RerankModel::load(EmbeddingModel::rankTestPath())->score(...$pair), 1e-3);
    }

    public function testEmbeddingIsAFinalClassWithoutConstructor(): void
    {
        $this->assertThrows(InferException::class, 'use Model::embed() or Model::embedMany()', fn () => new Embedding());
    }
}
