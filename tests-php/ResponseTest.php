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

    public function testReasoningIsSplitFromTheAnswer(): void
    {
        $r = self::model()->chat(self::thinkingPrompt(), maxTokens: 40);
        $this->assertSame('<think>Four plus four is eight.</think>8', $r->text());
        $this->assertSame('8', $r->answer());
        $this->assertSame('Four plus four is eight.', $r->reasoning());
        $this->assertTrue($r->hasReasoning());
        $this->assertSame('eos', $r->finishReason());
    }

    public function testRunCutOffInsideThinkKeepsThePartialThought(): void
    {
        $r = self::model()->chat(self::thinkingPrompt(), maxTokens: 4);
        $this->assertSame('length', $r->finishReason());
        $this->assertSame('<think>Four', $r->text());
        $this->assertSame('', $r->answer());
        $this->assertSame('Four', $r->reasoning());
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

    public function testEosTokenIsNotCounted(): void
    {
        $r = self::model()->chat(Prompt::user('What is the capital of France?'), maxTokens: 64);
        $this->assertSame('eos', $r->finishReason());
        $this->assertSame(self::model()->countTokens($r->text()), $r->tokensGenerated());
    }

    public function testJsonDecodesTheAnswerAsArrays(): void
    {
        $prompt = Prompt::system('Reply with JSON only.')->withUser('Tom is 3.')
            ->withAssistant('{"name": "Tom", "age": 3}')->withUser('Ann is 7.');
        $r = self::model()->chat($prompt, maxTokens: 40);
        $this->assertSame(json_decode($r->answer(), true), $r->json());
        $this->assertSame(['name' => 'Ann', 'age' => 7], $r->json());
    }

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

    public function testResponseMethodsReturnStableValues(): void
    {
        $r = self::model()->chat(Prompt::user('Hi!'), maxTokens: 5);
        $this->assertInstanceOf(Response::class, $r);
        $this->assertSame($r->text(), $r->text());
        $this->assertContains($r->finishReason(), ['eos', 'length', 'stop']);
    }
}
