<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;

/**
 * `lookup` (prompt-lookup decoding): tokens that followed the same n-gram
 * earlier in the prompt or the answer are proposed, evaluated in one batch
 * with the token before them, and kept only where the sampler itself picks
 * them. The judge is the same call without lookup: the same text, finish and
 * token count. (That the picks are the same decisions, and that sampling
 * keeps its distribution, is shown exactly in tests/lookup.rs, with every
 * token evaluated alone; here tokens are evaluated in batches, whose logits
 * can differ in the last bits from single steps, so the prompts are ones
 * whose answers have no near-tie.)
 *
 * What it checks is the engine's, the same on every PHP: CI's quick runs on the other PHPs leave it out.
 *
 * @group engine
 */
final class LookupTest extends InferTestCase
{
    /** Proposes at every chance, whole: every path of the check runs. */
    private const EAGER = ['ngram_min' => 1, 'ngram_max' => 3, 'tokens' => 10, 'adaptive' => false];

    private const PERSON = ['type' => 'object', 'required' => ['name', 'street', 'city'], 'additionalProperties' => false, 'properties' => [
        'name' => ['type' => 'string', 'maxLength' => 40],
        'street' => ['type' => 'string', 'maxLength' => 40],
        'city' => ['type' => 'string', 'maxLength' => 40],
    ]];

    private static function copyPrompt(): Prompt
    {
        return Prompt::system('Extract the fields as JSON. Copy them exactly as written.')
            ->withUser('Maria Fernanda Oliveira lives at Rua das Flores 45 in Lisbon.');
    }

    private static function ask(Model $model, array $options, int $maxTokens = 80, ?Prompt $prompt = null)
    {
        return $model->chat($prompt ?? self::copyPrompt(), maxTokens: $maxTokens, options: $options + ['cache_prompt' => false]);
    }

    /** @return array<string, array{string}> */
    public static function models(): array
    {
        // Gemma 3 is left out: its batched logits part from single steps' on this prompt (Lisbon/Lisboa, a near-tie).
        return ['SmolLM2' => ['model'], 'Qwen2.5-Coder' => ['qwenModel']];
    }

    /** @dataProvider models */
    public function testGreedyAnswersWithLookupEqualThoseWithout(string $which): void
    {
        $model = self::$which();
        foreach ([['schema' => self::PERSON]] as $constraint) {
            $off = self::ask($model, $constraint + ['lookup' => false]);
            foreach ([true, self::EAGER] as $lookup) {
                $on = self::ask($model, $constraint + ['lookup' => $lookup]);
                $what = $which . ' ' . json_encode($constraint + ['lookup' => $lookup]);
                $this->assertSame($off->text(), $on->text(), $what);
                $this->assertSame($off->finishReason(), $on->finishReason(), $what);
                $this->assertSame($off->tokensGenerated(), $on->tokensGenerated(), $what);
            }
            $v = json_decode($on->text(), true, flags: JSON_THROW_ON_ERROR);
            $this->assertSame(['name', 'street', 'city'], array_keys($v), $which);
        }
        // The eager settings had proposals kept: the comparison compared something.
        $this->assertGreaterThan(0, $on->timings()['lookup_accepted'], $which);
    }

    public function testTimingsCountProposedAndKeptTokensAndTheSteps(): void
    {
        $model = self::model();
        $off = self::ask($model, ['schema' => self::PERSON, 'lookup' => false]);
        $on = self::ask($model, ['schema' => self::PERSON, 'lookup' => self::EAGER]);
        $t = $off->timings();
        $this->assertSame([0, 0], [$t['lookup_proposed'], $t['lookup_accepted']]);
        $u = $on->timings();
        $this->assertGreaterThan(0, $u['lookup_accepted']);
        $this->assertLessThanOrEqual($u['lookup_proposed'], $u['lookup_accepted']);
        // A kept token saves at most one step (a forced one, none: it would
        // have ridden along with the next sampled token).
        $this->assertLessThan($t['generation_steps'], $u['generation_steps']);
        $this->assertGreaterThanOrEqual($t['generation_steps'] - $u['lookup_accepted'], $u['generation_steps']);
        $this->assertSame($off->text(), $on->text());
    }

    public function testProposalsThatTheSchemaForbidsNeverReachTheOutput(): void
    {
        $model = self::model();
        // The text goes on after the label the enum allows; a proposal that
        // copies it is cut by the grammar.
        $prompt = Prompt::system('Extract the status as JSON.')
            ->withUser('Status: active-pending-review since Monday. Status: active-pending-review.');
        $schema = ['type' => 'object', 'required' => ['status'], 'additionalProperties' => false, 'properties' => [
            'status' => ['enum' => ['active', 'inactive', 'suspended']],
        ]];
        $off = self::ask($model, ['schema' => $schema, 'lookup' => false], prompt: $prompt);
        $on = self::ask($model, ['schema' => $schema, 'lookup' => self::EAGER], prompt: $prompt);
        $this->assertSame($off->text(), $on->text());
        $v = json_decode($on->text(), true, flags: JSON_THROW_ON_ERROR);
        $this->assertContains($v['status'], ['active', 'inactive', 'suspended']);
        $this->assertSame('eos', $on->finishReason());
    }

    public function testAProposalCrossingAStopStringOrMaxTokensEndsWhereSamplingEnds(): void
    {
        $model = self::model();
        $prompt = Prompt::user('Repeat exactly: alpha bravo charlie delta echo foxtrot golf hotel');
        $free = ['lookup' => false];
        $full = self::ask($model, $free, 40, $prompt);
        // Stop strings in what the model writes: a word, and text across a
        // word boundary, both past the first words (where proposals run).
        $text = $full->text();
        $at = strpos($text, ' ', 20);
        $this->assertNotFalse($at, $text);
        foreach ([substr($text, $at + 1, 4), substr($text, $at - 2, 4)] as $stop) {
            $off = self::ask($model, $free + ['stop' => [$stop]], 40, $prompt);
            $on = self::ask($model, ['lookup' => self::EAGER, 'stop' => [$stop]], 40, $prompt);
            $this->assertSame('stop', $on->finishReason(), $stop);
            $this->assertSame($off->text(), $on->text(), $stop);
            $this->assertStringNotContainsString($stop, $on->text());
        }
        for ($n = 1; $n < min(12, $full->tokensGenerated()); $n++) {
            $on = self::ask($model, ['lookup' => self::EAGER], $n, $prompt);
            $this->assertSame($n, $on->tokensGenerated(), "maxTokens $n");
            $this->assertSame('length', $on->finishReason(), "maxTokens $n");
            $this->assertStringStartsWith($on->text(), $full->text(), "maxTokens $n");
        }
        $this->assertGreaterThan(0, $on->timings()['lookup_accepted']);
    }

    public function testADeadlineDuringGenerationEndsTheCallAndLeavesTheModelUsable(): void
    {
        $model = self::model();
        $prompt = Prompt::user('Repeat exactly, ten times: alpha bravo charlie delta echo foxtrot golf hotel');
        $options = ['lookup' => self::EAGER];
        $full = self::ask($model, $options, 200, $prompt);
        $r = self::ask($model, $options + ['timeout' => ($full->timings()['prompt_ms'] + $full->timings()['generation_ms'] / 3) / 1000], 200, $prompt);
        $this->assertSame('timeout', $r->finishReason());
        $this->assertLessThan($full->tokensGenerated(), $r->tokensGenerated());
        $this->assertStringStartsWith($r->text(), $full->text());
        $this->assertSame($full->text(), self::ask($model, $options, 200, $prompt)->text());
    }

    public function testAStreamYieldsWhatChatWrites(): void
    {
        $model = self::model();
        $options = ['schema' => self::PERSON, 'lookup' => self::EAGER, 'cache_prompt' => false];
        $whole = '';
        $pieces = 0;
        $stream = $model->stream(self::copyPrompt(), maxTokens: 80, options: $options);
        foreach ($stream as $piece) {
            $whole .= $piece;
            $pieces++;
        }
        $chat = self::ask($model, $options);
        $this->assertSame($chat->text(), $whole);
        $this->assertSame($chat->timings()['lookup_accepted'], $stream->response()->timings()['lookup_accepted']);
        // Kept proposals come out together: fewer pieces than tokens.
        $this->assertLessThan($chat->tokensGenerated(), $pieces + $chat->timings()['forced_tokens']);
    }

    public function testSampledAnswersWithLookupEqualThoseWithoutForTheSameSeed(): void
    {
        $model = self::model();
        $kept = 0;
        foreach ([1, 2, 3, 4, 5] as $seed) {
            $sampled = ['schema' => self::PERSON, 'temperature' => 0.8, 'seed' => $seed];
            $off = $model->chat(self::copyPrompt(), maxTokens: 80, temperature: 0.8, seed: $seed, options: ['schema' => self::PERSON, 'lookup' => false, 'cache_prompt' => false]);
            $on = $model->chat(self::copyPrompt(), maxTokens: 80, temperature: 0.8, seed: $seed, options: ['schema' => self::PERSON, 'lookup' => self::EAGER, 'cache_prompt' => false]);
            $this->assertSame($off->text(), $on->text(), json_encode($sampled));
            $kept += $on->timings()['lookup_accepted'];
        }
        $this->assertGreaterThan(0, $kept);
    }

    public function testChatManyProposesForEachSequence(): void
    {
        $model = self::model();
        $prompts = [
            self::copyPrompt(),
            Prompt::system('Extract the fields as JSON. Copy them exactly as written.')->withUser('Jonathan Pemberton lives at 12 Harbour Road in Bristol.'),
            Prompt::system('Extract the fields as JSON. Copy them exactly as written.')->withUser('Ana Beatriz Carvalho lives at Avenida Paulista 1000 in Sao Paulo.'),
        ];
        $many = $model->chatMany($prompts, maxTokens: 80, options: ['schema' => self::PERSON, 'lookup' => self::EAGER, 'cache_prompt' => false]);
        $this->assertCount(3, $many);
        foreach ($many as $i => $r) {
            $this->assertSame('eos', $r->finishReason(), "prompt $i");
            $v = json_decode($r->text(), true, flags: JSON_THROW_ON_ERROR);
            $this->assertSame(['name', 'street', 'city'], array_keys($v), "prompt $i");
            $t = $r->timings();
            $this->assertGreaterThan(0, $t['lookup_proposed'], "prompt $i");
            $this->assertLessThanOrEqual($t['lookup_proposed'], $t['lookup_accepted'], "prompt $i");
            $this->assertLessThan($r->tokensGenerated(), $t['generation_steps'] + $t['forced_tokens'], "prompt $i");
        }
    }

    /** @return array<string, array{mixed, string}> */
    public static function badLookups(): array
    {
        return [
            'a string' => ['yes', "option \"lookup\" must be a bool, or an array of 'ngram_min', 'ngram_max', 'tokens' and 'adaptive', got string"],
            'an unknown setting' => [['n' => 3], "option \"lookup\" has an unknown setting 'n' (known: ngram_min, ngram_max, tokens, adaptive)"],
            'tokens out of range' => [['tokens' => 0], "option \"lookup\" ['tokens'] must be an int from 1 to 64, got int"],
            'ngram too long' => [['ngram_max' => 17], "option \"lookup\" ['ngram_max'] must be an int from 1 to 16, got int"],
            'adaptive not a bool' => [['adaptive' => 1], "option \"lookup\" ['adaptive'] must be a bool, got int"],
            'min above max' => [['ngram_min' => 3, 'ngram_max' => 2], "option \"lookup\" ['ngram_min'] (3) must not exceed ['ngram_max'] (2)"],
        ];
    }

    /** @dataProvider badLookups */
    public function testBadLookupSettingsAreRefusedWithTheKey(mixed $value, string $message): void
    {
        $this->assertThrows(
            InferenceException::class,
            $message,
            fn () => self::model()->chat(Prompt::user('hi'), options: ['lookup' => $value]),
        );
    }
}
