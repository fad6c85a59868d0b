<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Prompt;
use Displace\Infer\Response;

/** text/answer/reasoning split, counts and json(). */
final class ResponseTest extends InferTestCase
{
    /** A few-shot prompt that makes the model think in <think> tags first. */
    private static function thinkingPrompt(): Prompt
    {
        return Prompt::system('You always think step by step inside <think> and </think> tags, then give the answer.')
            ->withUser('What is 1+1?')->withAssistant('<think>One plus one is two.</think>2')
            ->withUser('What is 2+3?')->withAssistant('<think>Two plus three is five.</think>5')
            ->withUser('What is 4+4?');
    }

    /** @group default-model */
    public function testReasoningIsSplitFromTheAnswer(): void
    {
        $r = self::model()->chat(self::thinkingPrompt(), maxTokens: 40);
        $this->assertSame(DefaultModel::THINK_TEXT, $r->text());
        $this->assertSame(DefaultModel::THINK_ANSWER, $r->answer());
        $this->assertSame(DefaultModel::THINK_REASONING, $r->reasoning());
        $this->assertTrue($r->hasReasoning());
        $this->assertSame('eos', $r->finishReason());
    }

    /** @group default-model */
    public function testRunCutOffInsideThinkKeepsThePartialThought(): void
    {
        $r = self::model()->chat(self::thinkingPrompt(), maxTokens: 4);
        $this->assertSame('length', $r->finishReason());
        $this->assertSame(DefaultModel::THINK_FIRST_4_TOKENS, $r->text());
        $this->assertSame('', $r->answer());
        $this->assertSame(substr(DefaultModel::THINK_FIRST_4_TOKENS, strlen('<think>')), $r->reasoning());
        $this->assertTrue($r->hasReasoning());
    }

    public function testNoThinkBlockMeansNoReasoning(): void
    {
        $r = self::model()->chat(Prompt::user('What is the capital of France?'), maxTokens: 20);
        $this->assertNull($r->reasoning());
        $this->assertFalse($r->hasReasoning());
        $this->assertSame(ltrim($r->text()), $r->answer());
    }

    public function testCountsDescribeTheRun(): void
    {
        $r = self::model()->chat(Prompt::user('Write a long story about a dragon.'), maxTokens: 7);
        $this->assertSame(7, $r->tokensGenerated());
        $longer = self::model()->chat(Prompt::user('Write a long story about a dragon who lives in a cave.'), maxTokens: 1);
        $this->assertGreaterThan($r->promptTokens(), $longer->promptTokens());
        $this->assertSame(
            $longer->promptTokens() - $r->promptTokens(),
            self::model()->countTokens(' who lives in a cave'),
        );
    }

    /** @group default-model */
    public function testEosTokenIsNotCounted(): void
    {
        $r = self::model()->chat(Prompt::system('Answer in one short sentence.')->withUser('What is the capital of France?'), maxTokens: 64);
        $this->assertSame('eos', $r->finishReason());
        $this->assertSame(self::model()->countTokens($r->text()), $r->tokensGenerated());
    }

    /** @group default-model */
    public function testJsonDecodesTheAnswerAsArrays(): void
    {
        $prompt = Prompt::system('Reply with JSON only.')->withUser('Tom is 3.')
            ->withAssistant('{"name": "Tom", "age": 3}')->withUser('Ann is 7.');
        $r = self::model()->chat($prompt, maxTokens: 40);
        $this->assertSame(json_decode($r->answer(), true), $r->json());
        $this->assertSame(DefaultModel::ANN, $r->json());
    }

    /** @group default-model */
    public function testJsonOfAnAnswerCutOffByMaxTokensThrows(): void
    {
        $prompt = Prompt::system('Reply with JSON only.')->withUser('Tom is 3.')
            ->withAssistant('{"name": "Tom", "age": 3}')->withUser('Ann is 7.');
        $r = self::model()->chat($prompt, maxTokens: 3);
        $this->assertSame('length', $r->finishReason());
        $this->assertThrows(InferenceException::class, 'answer is not valid JSON: EOF while parsing', fn () => $r->json());
    }

    public function testJsonOfProseThrows(): void
    {
        $r = self::model()->chat(Prompt::user('What is the capital of France?'), maxTokens: 20);
        $this->assertThrows(InferenceException::class, 'answer is not valid JSON', fn () => $r->json());
    }

    /** Everything a response reports, in one array. */
    private static function snapshot(Response $r): array
    {
        return [$r->text(), $r->answer(), $r->reasoning(), $r->hasReasoning(), $r->finishReason(), $r->tokensGenerated(), $r->promptTokens()];
    }

    /**
     * A response is a value: later calls on the same model (which reuse and
     * overwrite its context, its output buffer and its grammar state) change
     * nothing it reports. The reference is the same call on a model of its own.
     */
    public function testResponseIsNotChangedByLaterCallsOnTheModel(): void
    {
        $prompt = Prompt::user('Hi!');
        $r = self::model()->chat($prompt, maxTokens: 5);
        $before = self::snapshot($r);
        self::model()->chat(Prompt::user('Write a long story about a dragon.'), maxTokens: 20, temperature: 1.0, seed: 3);
        self::model()->raw('1, 2, 3,', maxTokens: 8, options: ['grammar' => 'root ::= [0-9, ]{1,20}']);
        $this->assertSame($before, self::snapshot($r));

        $other = \Displace\Infer\Model::load(self::modelPath());
        $this->assertSame($before, self::snapshot($other->chat($prompt, maxTokens: 5)));
        $other->close();
    }
}
