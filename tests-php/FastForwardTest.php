<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;

/**
 * `fast_forward`: what the constraint forces is appended without sampling and
 * evaluated in one batch. The text written is the text the grammar forces;
 * forced tokens obey every limit sampled ones obey. The judges are the
 * schema itself (decoded with json_decode and checked key by key), a regular
 * expression equivalent to the grammar, and the same call without it.
 *
 * What it checks is the engine's, the same on every PHP: CI's quick runs on the other PHPs leave it out.
 *
 * @group engine
 */
final class FastForwardTest extends InferTestCase
{
    private const PERSON = ['type' => 'object', 'required' => ['name', 'age', 'city'], 'additionalProperties' => false, 'properties' => [
        'name' => ['type' => 'string', 'maxLength' => 30],
        'age' => ['type' => 'integer', 'minimum' => 0, 'maximum' => 120],
        'city' => ['type' => 'string', 'maxLength' => 30],
    ]];

    private static function extract(Model $model, array $options, int $maxTokens = 96, int $nCtx = 2048)
    {
        return $model->chat(
            Prompt::system('Extract the data. Output JSON only.')->withUser('Maria is 31 years old and lives in Lisbon.'),
            maxTokens: $maxTokens,
            nCtx: $nCtx,
            options: $options + ['schema' => self::PERSON],
        );
    }

    /** The decoded object fits PERSON: exactly its keys, of their types and bounds. */
    private function assertPerson(string $json): void
    {
        $v = json_decode($json, true, flags: JSON_THROW_ON_ERROR);
        $this->assertSame(['name', 'age', 'city'], array_keys($v), $json);
        $this->assertIsString($v['name']);
        $this->assertLessThanOrEqual(30, mb_strlen($v['name']));
        $this->assertIsInt($v['age']);
        $this->assertTrue($v['age'] >= 0 && $v['age'] <= 120, $json);
        $this->assertIsString($v['city']);
    }

    public function testForcedTokensAreAppendedCountedAndTheOutputIsValid(): void
    {
        $on = self::extract(self::model(), ['fast_forward' => true, 'cache_prompt' => false]);
        $off = self::extract(self::model(), ['fast_forward' => false, 'cache_prompt' => false]);
        $this->assertSame('eos', $on->finishReason());
        $this->assertPerson($on->text());
        $t = $on->timings();
        // The keys `"age": ` and `"city": ` at least are forced: several tokens.
        $this->assertGreaterThanOrEqual(4, $t['forced_tokens'], $on->text());
        $this->assertSame($on->tokensGenerated(), $t['forced_tokens'] + $t['sampled_tokens']);
        $this->assertSame(0, $off->timings()['forced_tokens']);
        $this->assertSame($off->tokensGenerated(), $off->timings()['sampled_tokens']);
        // The same values: the forced keys are the ones the model wrote anyway.
        $this->assertSame(json_decode($off->text(), true), json_decode($on->text(), true));
    }

    /**
     * On by default; on and off, the outputs of several schemas are valid
     * and of the same shape. (That off samples every token as llama.cpp
     * does is RemoteTest's comparison with llama-server.)
     */
    public function testOutputsWithAndWithoutItHaveTheSameShape(): void
    {
        $model = self::model();
        $schemas = [
            'enum and list' => ['type' => 'object', 'required' => ['colour', 'tags'], 'additionalProperties' => false, 'properties' => [
                'colour' => ['enum' => ['crimson red', 'ocean blue', 'forest green']],
                'tags' => ['type' => 'array', 'maxItems' => 3, 'items' => ['type' => 'string', 'maxLength' => 12]],
            ]],
            'nested' => ['type' => 'object', 'required' => ['order'], 'additionalProperties' => false, 'properties' => [
                'order' => ['type' => 'object', 'required' => ['id', 'paid'], 'additionalProperties' => false, 'properties' => [
                    'id' => ['type' => 'integer'], 'paid' => ['type' => 'boolean'],
                ]],
            ]],
        ];
        foreach ($schemas as $name => $schema) {
            $ask = fn (array $o) => $model->chat(Prompt::user("Give an example of $name as JSON."), maxTokens: 80, options: $o + ['schema' => $schema, 'cache_prompt' => false]);
            $default = $ask([]);
            $off = $ask(['fast_forward' => false]);
            $on = $ask(['fast_forward' => true]);
            $this->assertSame($on->text(), $default->text(), "$name: on by default");
            $this->assertSame($on->timings()['forced_tokens'], $default->timings()['forced_tokens'], "$name: on by default");
            foreach (['off' => $off, 'on' => $on] as $which => $r) {
                $this->assertSame('eos', $r->finishReason(), "$name $which: {$r->text()}");
                $decoded = json_decode($r->text(), true, flags: JSON_THROW_ON_ERROR);
                $this->assertSame(array_keys($schema['properties']), array_keys($decoded), "$name $which");
            }
            $this->assertGreaterThan(0, $on->timings()['forced_tokens'], $name);
        }
    }

    public function testMaxTokensEndsInsideForcedText(): void
    {
        $full = self::extract(self::model(), ['fast_forward' => true, 'cache_prompt' => false]);
        foreach ([3, 5, 8] as $n) {
            $cut = self::extract(self::model(), ['fast_forward' => true, 'cache_prompt' => false], maxTokens: $n);
            $this->assertSame('length', $cut->finishReason(), "maxTokens $n");
            $this->assertSame($n, $cut->tokensGenerated(), "maxTokens $n");
            $this->assertStringStartsWith($cut->text(), $full->text(), "maxTokens $n");
        }
    }

    public function testAStopStringInsideForcedTextEndsTheOutputBeforeIt(): void
    {
        $r = self::extract(self::model(), ['fast_forward' => true, 'stop' => ['"city"'], 'cache_prompt' => false]);
        $this->assertSame('stop', $r->finishReason());
        $this->assertStringNotContainsString('"city"', $r->text());
        $this->assertStringContainsString('"age"', $r->text());
        // Across a forced run and the sampled token before it: `, "` starts
        // with the comma the model samples after the age.
        $r = self::extract(self::model(), ['fast_forward' => true, 'stop' => [', "ci'], 'cache_prompt' => false]);
        $this->assertSame('stop', $r->finishReason());
        $this->assertStringEndsWith('31', $r->text());
    }

    public function testADeadlineStopsAForcedRun(): void
    {
        $r = self::extract(self::model(), ['fast_forward' => true, 'timeout' => 0.001, 'cache_prompt' => false]);
        $this->assertSame('timeout', $r->finishReason());
    }

    /**
     * A forced literal of about 700 tokens is evaluated in one batch, which
     * takes far longer than the prompt: a deadline set between the two
     * lands inside the batch. The call ends 'timeout' with text the grammar
     * allows, and the model's next call is unharmed.
     */
    public function testADeadlineDuringAForcedBatchEndsTheCallAndLeavesTheModelUsable(): void
    {
        $model = self::model();
        $literal = str_repeat('the quick brown fox jumps over the lazy dog ', 70);
        $grammar = 'root ::= "' . $literal . '" [.!]';
        $prompt = Prompt::user('Hi');
        $options = ['grammar' => $grammar, 'fast_forward' => true, 'cache_prompt' => false];
        $full = $model->chat($prompt, maxTokens: 1000, nCtx: 2048, options: $options);
        $this->assertSame('eos', $full->finishReason());
        $this->assertGreaterThan(500, $full->timings()['forced_tokens']);
        $batch = $full->timings()['generation_ms'] ?? null;
        $this->assertIsFloat($batch);
        $prompted = $full->timings()['prompt_ms'];
        // Past the prompt's evaluation, well before the batch's end.
        $deadline = ($prompted + $batch / 3) / 1000;
        $r = $model->chat($prompt, maxTokens: 1000, nCtx: 2048, options: $options + ['timeout' => $deadline]);
        $this->assertSame('timeout', $r->finishReason());
        $this->assertStringStartsWith($r->text(), $literal . '.');
        $this->assertLessThan(strlen($literal), strlen($r->text()));
        $again = $model->chat($prompt, maxTokens: 1000, nCtx: 2048, options: $options);
        $this->assertSame($full->text(), $again->text());
    }

    public function testAForcedRunThatFillsTheContextEndsWithLength(): void
    {
        $model = self::model();
        $prompt = Prompt::user('Hi');
        $tokens = $model->countTokens($model->renderPrompt($prompt));
        // Room for a few tokens only; the grammar forces a long literal.
        $grammar = 'root ::= "The quick brown fox jumps over the lazy dog and runs far away into the woods" [.!]';
        $r = $model->chat($prompt, maxTokens: 64, nCtx: $tokens + 4, options: ['grammar' => $grammar, 'fast_forward' => true, 'cache_prompt' => false]);
        $this->assertSame('length', $r->finishReason());
        $this->assertLessThanOrEqual(4, $r->tokensGenerated());
        $this->assertStringStartsWith($r->text(), 'The quick brown fox jumps over the lazy dog');
    }

    public function testAStreamYieldsForcedPiecesAndCanBeCancelled(): void
    {
        $model = self::model();
        $options = ['schema' => self::PERSON, 'fast_forward' => true, 'cache_prompt' => false];
        $prompt = Prompt::system('Extract the data. Output JSON only.')->withUser('Maria is 31 years old and lives in Lisbon.');
        $whole = '';
        foreach ($model->stream($prompt, maxTokens: 96, options: $options) as $piece) {
            $whole .= $piece;
        }
        $this->assertSame(self::extract($model, ['fast_forward' => true, 'cache_prompt' => false])->text(), $whole);

        $stream = $model->stream($prompt, maxTokens: 96, options: $options);
        foreach ($stream as $piece) {
            $stream->cancel();
            break;
        }
        $this->assertSame('cancelled', $stream->finishReason());
        $this->assertStringStartsWith($stream->response()->text(), $whole);
    }

    /**
     * Forced text that begins or ends inside what would be one token, with
     * multi-byte characters at the edges, right after the prompt, with three
     * vocabularies (byte-level BPE of SmolLM2 and Qwen, SentencePiece of
     * Gemma 3): the text is what the grammar allows, and the forced part
     * is forced.
     */
    public function testForcedTextAtTokenAndCharacterBoundariesWithThreeVocabularies(): void
    {
        $grammar = 'root ::= "Réponse: « Grüße aus Köln » – wor" [a-z]{1,8} " ✓" [0-9]{1,3}';
        $pattern = '/^Réponse: « Grüße aus Köln » – wor[a-z]{1,8} ✓[0-9]{1,3}$/u';
        foreach (['smollm2' => self::model(), 'qwen' => self::qwenModel(), 'gemma' => self::gemmaModel()] as $name => $model) {
            foreach ([true, false] as $ff) {
                // No reasoning budget: the answer, and the grammar, start at
                // the prompt's end, so the forced text begins right there.
                $r = $model->chat(Prompt::user('Write: Réponse: « Grüße aus Köln » – world ✓42'), maxTokens: 48, options: ['grammar' => $grammar, 'fast_forward' => $ff, 'cache_prompt' => false, 'max_reasoning_tokens' => 0]);
                $this->assertSame('eos', $r->finishReason(), "$name ff=" . var_export($ff, true));
                $this->assertMatchesRegularExpression($pattern, $r->text(), "$name ff=" . var_export($ff, true));
                if ($ff) {
                    $this->assertGreaterThanOrEqual(3, $r->timings()['forced_tokens'], $name);
                }
            }
        }
    }

    /**
     * chatMany() forwards each sequence on its own: every result is what
     * chat() with fast-forward returns for that prompt alone (as without
     * it), with the same forced tokens. Names, ages and cities of unequal
     * lengths put the sequences' forced runs at different steps, which
     * chatMany() spreads over the steps after (a batch takes as many tokens
     * from each sequence): a run's logits are taken at its end only.
     */
    public function testChatManyForwardsEachSequenceAsChatDoes(): void
    {
        $model = self::model();
        $prompts = [];
        foreach (['Maria is 31 and lives in Lisbon.', 'Tom, 45, from Leeds.', 'Ana (22) lives in Porto.', 'Li Wei is 38, in Shanghai.', 'Jo, 9, Rome.', 'The oldest woman in the parish, Agnes Whitmore-Callaghan, turned 102 this week in Ballykilcavan.'] as $text) {
            $prompts[] = Prompt::system('Extract the data. Output JSON only.')->withUser($text);
        }
        $options = ['schema' => self::PERSON, 'fast_forward' => true, 'cache_prompt' => false];
        $many = $model->chatMany($prompts, maxTokens: 64, options: $options + ['parallel' => 6]);
        foreach ($prompts as $i => $prompt) {
            $alone = $model->chat($prompt, maxTokens: 64, options: $options);
            $this->assertSame($alone->text(), $many[$i]->text(), "prompt $i");
            $this->assertSame($alone->timings()['forced_tokens'], $many[$i]->timings()['forced_tokens'], "prompt $i");
            $this->assertGreaterThan(0, $many[$i]->timings()['forced_tokens'], "prompt $i");
            $this->assertPerson($many[$i]->text());
        }
    }

    public function testTheOptionMustBeABool(): void
    {
        $this->assertThrows(InferenceException::class, 'option "fast_forward" must be a bool, got string', fn () => self::model()->chat(Prompt::user('Hi'), maxTokens: 2, options: ['fast_forward' => 'yes']));
    }
}
