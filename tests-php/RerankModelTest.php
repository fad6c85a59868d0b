<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\InferException;
use Displace\Infer\Model;
use Displace\Infer\ModelLoadException;
use Displace\Infer\Prompt;
use Displace\Infer\RerankModel;

/**
 * RerankModel, both ways of scoring:
 * - a cross-encoder (a GGUF with rank pooling): the test-only MiniLM with a
 *   random classification head, whose scores must be the sigmoid of what an
 *   independent float64 forward pass of the same weights and head gives;
 * - an instruct model asked yes or no (SmolLM2): the score is the share of
 *   "yes" in the next-token odds, so it must be above one half exactly where
 *   the model, made to answer yes or no, answers yes.
 */
final class RerankModelTest extends InferTestCase
{
    private static ?RerankModel $crossEncoder = null;
    private static ?RerankModel $judge = null;

    private const QUERY = 'What is the capital of France?';
    private const DOCUMENTS = [
        'I like to play football on Sundays.',
        'The capital of France is Paris.',
        'Bananas are yellow fruits.',
        'My car needs new tyres.',
    ];

    private static function crossEncoder(): RerankModel
    {
        $path = EmbeddingModel::rankTestPath();
        if (!is_file($path)) {
            self::fail("test cross-encoder not found at $path: run `make embedding-model`");
        }
        return self::$crossEncoder ??= RerankModel::load($path);
    }

    private static function judge(): RerankModel
    {
        return self::$judge ??= RerankModel::load(self::modelPath());
    }

    /** @group engine */
    public function testACrossEncoderScoresWithItsClassificationHead(): void
    {
        $pairs = array_map(static fn (string $d): array => [self::QUERY, $d], self::DOCUMENTS);
        $pairs[] = ['Café in Zürich?', 'Ein naïver Ansatz kostet 12% mehr.'];
        $reference = EmbeddingModel::reference(['pairs' => $pairs, 'seed' => EmbeddingModel::RANK_SEED], ['--rank']);
        foreach ($pairs as $i => [$query, $document]) {
            $score = self::crossEncoder()->score($query, $document);
            $this->assertGreaterThan(0.0, $score);
            $this->assertLessThan(1.0, $score);
            $this->assertEqualsWithDelta($reference['probabilities'][$i], $score, 1e-3, "pair $i");
        }
    }

    public function testRankOrdersByScoreBestFirst(): void
    {
        foreach ([self::crossEncoder(), self::judge()] as $model) {
            $scores = array_map(static fn (string $d): float => $model->score(self::QUERY, $d), self::DOCUMENTS);
            $ranked = $model->rank(self::QUERY, self::DOCUMENTS);
            $this->assertEqualsCanonicalizing(array_keys(self::DOCUMENTS), array_column($ranked, 'index'));
            foreach ($ranked as $k => $entry) {
                $this->assertSame(['index', 'score'], array_keys($entry));
                $this->assertEqualsWithDelta($scores[$entry['index']], $entry['score'], 0.05, 'rank() scores the document as score() does');
                if ($k > 0) {
                    $this->assertGreaterThanOrEqual($entry['score'], $ranked[$k - 1]['score'], 'best first');
                }
            }
        }
    }

    /** @group engine */
    public function testTheObviouslyRelevantDocumentComesFirst(): void
    {
        $cases = [
            [self::QUERY, self::DOCUMENTS, 1],
            ['How do I bake bread?', ['The stock market closed higher today.', 'To bake bread, mix flour, water, yeast and salt, let it rise, then bake it at 220 degrees.', 'Cats sleep for most of the day.'], 1],
            ['Which planet is known as the Red Planet?', ['Pizza is an Italian dish.', 'The violin has four strings.', 'Mars is called the Red Planet because of its reddish color.'], 2],
        ];
        foreach ($cases as [$query, $documents, $relevant]) {
            $this->assertSame($relevant, self::judge()->rank($query, $documents)[0]['index'], $query);
        }
    }

    /** @group engine */
    public function testTheYesNoScoreIsTheChanceTheModelAnswersYes(): void
    {
        // The judgement asked as a chat whose answer a grammar limits to yes
        // or no, sampled at temperature 1 with no filter: the share of yes
        // answers estimates the score (150 draws: a standard error of at
        // most 0.041).
        $model = Model::load(self::modelPath());
        $system = 'Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
            . 'Note that the answer can only be "yes" or "no".';
        $instruct = 'Given a web search query, retrieve relevant passages that answer the query';
        $options = ['grammar' => 'root ::= "yes" | "Yes" | "no" | "No"', 'top_k' => 0, 'top_p' => 1.0, 'min_p' => 0.0];
        foreach ([self::DOCUMENTS[1], self::DOCUMENTS[2], 'Paris'] as $document) {
            $prompt = Prompt::system($system)->withUser("<Instruct>: $instruct\n<Query>: " . self::QUERY . "\n<Document>: $document");
            $yes = 0;
            for ($seed = 1; $seed <= 150; $seed++) {
                $answer = $model->chat($prompt, maxTokens: 3, temperature: 1.0, seed: $seed, options: $options)->text();
                $yes += strtolower($answer) === 'yes' ? 1 : 0;
            }
            $score = self::judge()->score(self::QUERY, $document);
            $this->assertEqualsWithDelta($yes / 150, $score, 0.15, "\"$document\": $yes yes of 150, score $score");
        }
    }

    public function testEqualScoresKeepTheInputOrderAndTopKCuts(): void
    {
        $docs = ['The capital of France is Paris.', 'Bananas are yellow fruits.', 'The capital of France is Paris.'];
        foreach ([self::crossEncoder(), self::judge()] as $model) {
            $ranked = $model->rank(self::QUERY, $docs);
            $first = array_search(0, array_column($ranked, 'index'), true);
            $third = array_search(2, array_column($ranked, 'index'), true);
            $this->assertSame($ranked[$first]['score'], $ranked[$third]['score'], 'equal documents, equal scores');
            $this->assertSame($first + 1, $third, 'ties in input order');
            $this->assertSame(array_slice($ranked, 0, 2), $model->rank(self::QUERY, $docs, 2));
            $this->assertSame($ranked, $model->rank(self::QUERY, $docs, 10));
            $this->assertSame([], $model->rank(self::QUERY, []));
        }
    }

    /** @group engine */
    public function testManyDocumentsAreRankedInBatches(): void
    {
        $docs = [];
        for ($i = 0; $i < 40; $i++) {
            $docs[] = self::DOCUMENTS[$i % 4] . str_repeat(' And more.', $i % 5);
        }
        foreach ([self::crossEncoder(), self::judge()] as $model) {
            $ranked = $model->rank(self::QUERY, $docs);
            $this->assertCount(40, $ranked);
            $this->assertEqualsCanonicalizing(range(0, 39), array_column($ranked, 'index'));
            foreach ([0, 17, 39] as $i) {
                $entry = $ranked[array_search($i, array_column($ranked, 'index'), true)];
                $this->assertEqualsWithDelta($model->score(self::QUERY, $docs[$i]), $entry['score'], 0.05, "document $i");
            }
        }
    }

    /** @return array<string, array{callable(RerankModel): mixed, string}> */
    public static function badCalls(): array
    {
        return [
            'topK zero' => [fn (RerankModel $r) => $r->rank('q', ['a'], 0), 'topK must be an int >= 1 or null, got 0'],
            'topK negative' => [fn (RerankModel $r) => $r->rank('q', ['a'], -3), 'topK must be an int >= 1 or null, got -3'],
            'documents not a list' => [fn (RerankModel $r) => $r->rank('q', ['a' => 'x']), 'documents must be a list'],
            'document not a string' => [fn (RerankModel $r) => $r->rank('q', ['a', 1.5]), 'documents[1] must be a string, got float'],
            'document not UTF-8' => [fn (RerankModel $r) => $r->rank('q', ["\xff"]), 'documents[0] is not valid UTF-8'],
            'document with NUL' => [fn (RerankModel $r) => $r->score('q', "a\0"), 'document contains a NUL byte at offset 1'],
            'query not UTF-8' => [fn (RerankModel $r) => $r->score("\xfe", 'd'), 'query is not valid UTF-8'],
            'pair over the context' => [fn (RerankModel $r) => $r->score('q', str_repeat('word ', 600)), 'query and document are'],
            'ranked pair over the context' => [fn (RerankModel $r) => $r->rank('q', ['ok', str_repeat('word ', 600)]), 'documents[1]: query and document are'],
        ];
    }

    /** @dataProvider badCalls */
    public function testBadCallsThrowClearly(callable $call, string $message): void
    {
        $this->assertThrows(InferenceException::class, $message, fn () => $call(self::crossEncoder()));
    }

    public function testThePairMustFitTheContextOption(): void
    {
        $small = RerankModel::load(self::modelPath(), ['n_ctx' => 64]);
        $this->assertThrows(InferenceException::class, 'more than the context of 64 (option n_ctx',
            fn () => $small->score('q', str_repeat('word ', 80)));
        $this->assertThrows(InferenceException::class, 'more than the context of 512',
            fn () => self::crossEncoder()->score('q', str_repeat('word ', 600)));
    }

    /** @group engine */
    public function testTheInstructionIsPartOfTheJudgement(): void
    {
        $other = RerankModel::load(self::modelPath(), ['instruction' => 'Judge whether the document is about fruit']);
        $this->assertNotSame(self::judge()->score(self::QUERY, self::DOCUMENTS[2]), $other->score(self::QUERY, self::DOCUMENTS[2]));
    }

    /** @return array<string, array{string, array<string, mixed>, string}> */
    public static function badLoads(): array
    {
        return [
            'unknown option' => ['chat', ['pooling' => 'rank'], 'option "pooling" is not a known option (known: n_gpu_layers, main_gpu, use_mmap, use_mlock, n_threads, n_ctx, instruction)'],
            'n_ctx zero' => ['chat', ['n_ctx' => 0], 'option "n_ctx" must be an int >= 1, got int 0'],
            'instruction not a string' => ['chat', ['instruction' => 5], 'option "instruction" must be a UTF-8 string without NUL bytes, got int'],
            'instruction with NUL' => ['chat', ['instruction' => "a\0b"], 'option "instruction" must be a UTF-8 string without NUL bytes'],
            'missing file' => ['/nonexistent/model.gguf', [], 'model file not found'],
            'an embedding model without a chat template' => ['embedding', [], 'cannot rerank: it declares no rank pooling (not a cross-encoder) and has no chat template to ask it with'],
        ];
    }

    /** @dataProvider badLoads */
    public function testBadLoadsThrowModelLoadException(string $which, array $options, string $message): void
    {
        $path = match ($which) {
            'chat' => self::modelPath(),
            'embedding' => EmbeddingModel::path(),
            default => $which,
        };
        $this->assertThrows(ModelLoadException::class, $message, fn () => RerankModel::load($path, $options));
    }

    public function testAModelWithoutSingleTokenYesAndNoIsRefused(): void
    {
        // The default model with the vocabulary's "yes" renamed (a GGUF
        // string is its u64 length, then its bytes): the word then takes
        // several tokens.
        $bytes = file_get_contents(self::modelPath());
        $entry = pack('P', 3) . 'yes';
        $this->assertSame(1, substr_count($bytes, $entry), 'the premise: "yes" is one entry of the vocabulary');
        $path = $this->tempFile(str_replace($entry, pack('P', 3) . 'yeq', $bytes));
        $this->assertGreaterThan(1, Model::load($path)->countTokens('yes'));
        $this->assertThrows(ModelLoadException::class, 'cannot rerank: its vocabulary has no single token for "yes"',
            fn () => RerankModel::load($path));
    }

    public function testCloseIsIdempotentAndLaterCallsThrow(): void
    {
        $r = RerankModel::load(EmbeddingModel::rankTestPath());
        $r->close();
        $r->close();
        $this->assertThrows(InferenceException::class, 'model has been closed', fn () => $r->score('a', 'b'));
        $this->assertThrows(InferenceException::class, 'model has been closed', fn () => $r->rank('a', ['b']));
    }

    public function testRerankModelIsMadeByLoad(): void
    {
        $this->assertThrows(InferException::class, 'use RerankModel::load()', fn () => new RerankModel());
    }
}
