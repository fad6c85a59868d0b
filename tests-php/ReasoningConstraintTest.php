<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;

/**
 * Reasoning under a schema or grammar: a <think> block is free text, the constraint shapes the answer after
 * </think>, and max_reasoning_tokens bounds the thought (the engine closes it). SmolLM2 is no reasoning model, so the
 * thought is opened in the prompt (raw, or a template that opens it as Qwen3's does) or by a few-shot prompt, and the
 * budget makes every run deterministic.
 *
 * The judges: the thought must be exactly what the same greedy run writes without any constraint (it is not
 * shaped), and the answer must satisfy the schema, checked here field by field.
 *
 * What it checks is the engine's, the same on every PHP: CI's quick runs on the other PHPs leave it out.
 *
 * @group engine
 */
final class ReasoningConstraintTest extends InferTestCase
{
    private const SCHEMA = [
        'type' => 'object',
        'properties' => ['answer' => ['type' => 'integer'], 'unit' => ['enum' => ['apples', 'pears']]],
        'required' => ['answer', 'unit'],
        'additionalProperties' => false,
    ];

    private const RAW_PROMPT = "<|im_start|>system\nThink first, then answer in JSON.<|im_end|>\n"
        . "<|im_start|>user\nI had 3 apples and bought 4 more. How many apples now?<|im_end|>\n"
        . "<|im_start|>assistant\n<think>\n";

    /** A Qwen3-style template: ChatML, and the assistant's turn opens a thought unless enable_thinking is false. */
    private const THINKING_TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        . "{% if add_generation_prompt %}<|im_start|>assistant\n"
        . "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}"
        . "{% endif %}";

    private static function assertSatisfiesSchema(string $json): void
    {
        $value = json_decode($json, true, 512, JSON_THROW_ON_ERROR);
        self::assertIsArray($value, $json);
        self::assertSame(['answer', 'unit'], array_keys($value), $json);
        self::assertIsInt($value['answer'], $json);
        self::assertContains($value['unit'], ['apples', 'pears'], $json);
    }

    /** The text after the first </think> and its blank line; fails when the block is not closed so. */
    private static function afterThought(string $text): array
    {
        $at = strpos($text, "</think>\n\n");
        self::assertNotFalse($at, "the thought is closed by </think> and a blank line: $text");
        return [substr($text, 0, $at), substr($text, $at + strlen("</think>\n\n"))];
    }

    /** @group default-model */
    public function testARawPromptThatOpensAThoughtThinksFreelyThenAnswersInTheSchema(): void
    {
        $model = self::model();
        $free = $model->raw(self::RAW_PROMPT, maxTokens: 12);
        $stream = $model->rawStream(self::RAW_PROMPT, maxTokens: 96, options: [
            'schema' => self::SCHEMA,
            'max_reasoning_tokens' => 12,
        ]);
        $text = $stream->text();
        $this->assertSame('eos', $stream->finishReason(), $text);
        [$thought, $answer] = self::afterThought($text);
        $this->assertSame($free, $thought, 'the thought is the unconstrained text, cut at the budget');
        self::assertSatisfiesSchema($answer);
        $this->assertSame($text, $model->raw(self::RAW_PROMPT, maxTokens: 96, options: [
            'schema' => self::SCHEMA,
            'max_reasoning_tokens' => 12,
        ]));
    }

    /** @group default-model */
    public function testAModelThatEndsItsTurnWhileThinkingStillAnswersInTheSchema(): void
    {
        // Unconstrained, the model ends its turn at once, inside the thought the prompt opened.
        $prompt = "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n<think>\nHello!";
        $free = self::model()->rawStream($prompt, maxTokens: 4);
        $this->assertSame('', $free->text());
        $this->assertSame('eos', $free->finishReason());
        // Under a schema that would leave no answer: the engine closes the thought and the answer follows.
        $schema = ['type' => 'object', 'properties' => ['greeting' => ['type' => 'string']]];
        $stream = self::model()->rawStream($prompt, maxTokens: 64, options: ['schema' => $schema]);
        $this->assertSame('eos', $stream->finishReason(), $stream->text());
        [$thought, $answer] = self::afterThought($stream->text());
        $this->assertSame('', $thought);
        $this->assertSame(['greeting'], array_keys(json_decode($answer, true, 512, JSON_THROW_ON_ERROR)));
        $this->assertIsString(json_decode($answer, true)['greeting']);
    }

    /** @group default-model */
    public function testWithoutAConstraintTheBudgetStillClosesTheThought(): void
    {
        $model = self::model();
        $free = $model->raw(self::RAW_PROMPT, maxTokens: 5);
        $text = $model->raw(self::RAW_PROMPT, maxTokens: 24, options: ['max_reasoning_tokens' => 5]);
        [$thought] = self::afterThought($text);
        $this->assertSame($free, $thought);
    }

    public function testAThinkingTemplateReasonsThenAnswersInTheSchema(): void
    {
        $model = $this->modelWithTemplate(self::THINKING_TEMPLATE);
        $prompt = Prompt::system('Think first, then answer in JSON.')
            ->withUser('I had 3 apples and bought 4 more. How many apples now?');
        $this->assertStringEndsWith("<think>\n", $model->renderPrompt($prompt));
        $free = $model->chat($prompt, maxTokens: 10);
        $options = ['schema' => self::SCHEMA, 'max_reasoning_tokens' => 10];
        $r = $model->chat($prompt, maxTokens: 96, options: $options);
        $this->assertSame('eos', $r->finishReason(), $r->text());
        $this->assertSame(trim($free->text()), $r->reasoning());
        self::assertSatisfiesSchema($r->answer());
        $this->assertSame(json_decode($r->answer(), true), $r->json());

        // The stream: the thought keyed 'reasoning' (its closing tag included), then the answer.
        $keys = [];
        $joined = '';
        foreach ($model->stream($prompt, maxTokens: 96, options: $options) as $key => $piece) {
            $keys[] = $key;
            $joined .= $piece;
        }
        $this->assertSame($r->text(), $joined);
        $this->assertSame('reasoning', $keys[0]);
        $this->assertSame('answer', end($keys));
        $this->assertSame($keys, array_merge(
            array_fill(0, count(array_filter($keys, fn ($k) => $k === 'reasoning')), 'reasoning'),
            array_fill(0, count(array_filter($keys, fn ($k) => $k === 'answer')), 'answer'),
        ));

        $many = $model->chatMany([$prompt, $prompt], maxTokens: 96, options: $options);
        $this->assertSame($r->text(), $many[0]->text());
        $this->assertSame($r->text(), $many[1]->text());
        $model->close();
    }

    public function testABudgetOfZeroClosesTheThoughtBeforeGeneration(): void
    {
        $model = $this->modelWithTemplate(self::THINKING_TEMPLATE);
        $prompt = Prompt::user('I had 3 apples and bought 4 more. How many apples now? Answer in JSON.');
        $r = $model->chat($prompt, maxTokens: 64, options: ['schema' => self::SCHEMA, 'max_reasoning_tokens' => 0]);
        $this->assertSame('eos', $r->finishReason(), $r->text());
        $this->assertStringStartsWith("</think>\n\n", $r->text());
        $this->assertFalse($r->hasReasoning());
        self::assertSatisfiesSchema($r->answer());

        // enable_thinking: false closes the block in the prompt: the grammar applies from the first token.
        $closed = $model->chat($prompt, maxTokens: 64, options: [
            'schema' => self::SCHEMA,
            'template_vars' => ['enable_thinking' => false],
        ]);
        $this->assertSame('eos', $closed->finishReason());
        self::assertSatisfiesSchema($closed->text());
        $model->close();
    }

    /** A few-shot prompt after which the model opens <think> itself (see ResponseTest). */
    private static function thinkingPrompt(): Prompt
    {
        return Prompt::system('You always think step by step inside <think> and </think> tags, then give the answer.')
            ->withUser('What is 1+1?')->withAssistant('<think>One plus one is two.</think>2')
            ->withUser('What is 2+3?')->withAssistant('<think>Two plus three is five.</think>5')
            ->withUser('What is 4+4?');
    }

    /** @group default-model */
    public function testAModelThatOpensAThoughtItselfThinksThenAnswersInTheGrammar(): void
    {
        $model = self::model();
        $this->assertSame(DefaultModel::THINK_TEXT, $model->chat(self::thinkingPrompt(), maxTokens: 40)->text());
        // It closes the thought itself ("</think>8"): the answer after the tag is the grammar's.
        $grammar = 'root ::= "The answer is " [0-9]+ "."';
        $r = $model->chat(self::thinkingPrompt(), maxTokens: 40, options: ['grammar' => $grammar]);
        $this->assertSame('eos', $r->finishReason(), $r->text());
        $this->assertSame(DefaultModel::THINK_REASONING, $r->reasoning());
        $this->assertMatchesRegularExpression('/^The answer is [0-9]+\.$/', $r->answer());
        // With a budget the engine closes it.
        $r = $model->chat(self::thinkingPrompt(), maxTokens: 40, options: ['grammar' => $grammar, 'max_reasoning_tokens' => 1]);
        $this->assertSame('eos', $r->finishReason(), $r->text());
        [$thought, $answer] = self::afterThought($r->text());
        $this->assertSame(DefaultModel::THINK_FIRST_4_TOKENS, $thought);
        $this->assertMatchesRegularExpression('/^The answer is [0-9]+\.$/', $answer);
    }

    /** @group default-model */
    public function testAFirstLessThanSignOpensNoThoughtWhenThePromptNeverSpeaksOfOne(): void
    {
        // The model's first pick here is "<" (the next list item), which the grammar refuses: it is refused, and no
        // thought starts, since nothing in the prompt uses <think>.
        $prompt = "HTML list:\n<ul>\n<li>one</li>\n<li>two</li>\n";
        $this->assertSame('<', self::model()->raw($prompt, maxTokens: 1));
        $text = self::model()->raw($prompt, maxTokens: 8, options: ['grammar' => 'root ::= [a-z]+']);
        $this->assertMatchesRegularExpression('/^[a-z]+$/', $text);
    }

    /** @group default-model */
    public function testAGrammarThatWritesTheThoughtItselfKeepsIt(): void
    {
        // The grammar allows <think>: the block is the grammar's, not free text.
        $r = self::model()->chat(self::thinkingPrompt(), maxTokens: 40, options: [
            'grammar' => 'root ::= "<think>" [a-z ]{1,20} "</think>" [0-9]',
        ]);
        $this->assertMatchesRegularExpression('/^<think>[a-z ]{1,20}<\/think>[0-9]$/', $r->text());
    }

    /** @return iterable<string, array{mixed, string}> */
    public static function badBudgets(): iterable
    {
        yield 'negative' => [-1, 'option "max_reasoning_tokens" must be an int >= 0 (0: no thinking), got int -1'];
        yield 'a string' => ['8', 'option "max_reasoning_tokens" must be an int >= 0 (0: no thinking), got string'];
        yield 'a float' => [1.5, 'option "max_reasoning_tokens" must be an int >= 0 (0: no thinking), got float'];
    }

    /** @dataProvider badBudgets */
    public function testABadBudgetIsRefused(mixed $budget, string $message): void
    {
        $options = ['max_reasoning_tokens' => $budget];
        $this->assertThrows(InferenceException::class, $message, fn () => self::model()->chat(Prompt::user('hi'), options: $options));
        $this->assertThrows(InferenceException::class, $message, fn () => self::model()->raw('hi', options: $options));
    }
}
