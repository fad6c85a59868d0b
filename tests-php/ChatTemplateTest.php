<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;

/**
 * The GGUF's chat template rendered as Jinja (renderPrompt(), template_vars, chatTemplateKind()). Renderings are
 * judged against the SmolLM2 format written out by hand, and against templates written here and stored into a copy
 * of the model file.
 */
final class ChatTemplateTest extends InferTestCase
{
    private const SMOLLM_SYSTEM = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face';

    /** ChatML turns, as SmolLM2's model card documents them. */
    private static function chatml(array $turns): string
    {
        $out = '';
        foreach ($turns as [$role, $content]) {
            $out .= "<|im_start|>{$role}\n{$content}<|im_end|>\n";
        }
        return $out . "<|im_start|>assistant\n";
    }

    /**
     * A copy of the model whose stored template is $template. The GGUF string keeps its length (the template is
     * padded with a Jinja comment), so every offset after it stays valid.
     */
    private function modelWithTemplate(string $template): Model
    {
        $bytes = file_get_contents(self::modelPath());
        $key = 'tokenizer.chat_template';
        $at = strpos($bytes, $key);
        $this->assertNotFalse($at);
        $lengthAt = $at + strlen($key) + 4; // after the key: u32 type (8 = string), then u64 length
        $this->assertSame(8, unpack('V', substr($bytes, $at + strlen($key), 4))[1]);
        $length = unpack('P', substr($bytes, $lengthAt, 8))[1];
        $padding = $length - strlen($template) - 4;
        $this->assertGreaterThanOrEqual(0, $padding, 'the test template fits in the stored one');
        $replacement = $template . '{#' . str_repeat(' ', $padding) . '#}';
        $bytes = substr_replace($bytes, $replacement, $lengthAt + 8, $length);
        return Model::load($this->tempFile($bytes));
    }

    /** @group default-model */
    public function testSmolLm2RendersChatMlTurns(): void
    {
        $prompt = Prompt::system('Be brief.')->withUser('Hi')->withAssistant('Hello.')->withUser("Two\nlines");
        $this->assertSame(
            self::chatml([['system', 'Be brief.'], ['user', 'Hi'], ['assistant', 'Hello.'], ['user', "Two\nlines"]]),
            self::model()->renderPrompt($prompt),
        );
        $this->assertSame('jinja', self::model()->chatTemplateKind());
    }

    /** @group default-model */
    public function testSmolLm2AddsItsDefaultSystemTurnAsHuggingFaceDoes(): void
    {
        $this->assertSame(
            self::chatml([['system', self::SMOLLM_SYSTEM], ['user', 'What is 2+2?']]),
            self::model()->renderPrompt(Prompt::user('What is 2+2?')),
        );
    }

    /** @group default-model */
    public function testChatGivesTheModelTheRenderedPrompt(): void
    {
        $prompt = Prompt::system('Answer in one word.')->withUser('Capital of France?');
        $rendered = self::model()->renderPrompt($prompt);
        $chat = self::model()->chat($prompt, maxTokens: 8);
        $raw = self::model()->raw($rendered, maxTokens: 8);
        $this->assertSame($raw, $chat->text());
        $this->assertSame(self::model()->countTokens($rendered), $chat->promptTokens());
    }

    public function testTemplateVariablesReachTheTemplate(): void
    {
        $model = $this->modelWithTemplate(
            "{% for m in messages %}[{{ m.role }}:{{ m.content | trim }}]{% endfor %}"
            . "{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}"
            . "{{ settings | tojson }}|{{ bos_token }}|{{ eos_token }}"
        );
        $prompt = Prompt::system(' S ')->withUser('U');
        $this->assertSame(
            '[system:S][user:U]<think></think>{"depth": 2, "tags": ["a", "é"], "on": true, "none": null}|<|im_start|>|<|im_end|>',
            $model->renderPrompt($prompt, ['template_vars' => [
                'enable_thinking' => false,
                'settings' => ['depth' => 2, 'tags' => ['a', 'é'], 'on' => true, 'none' => null],
            ]]),
        );
        $this->assertSame(
            '[system:S][user:U]null|<|im_start|>|<|im_end|>',
            $model->renderPrompt($prompt, ['template_vars' => ['enable_thinking' => true, 'settings' => null]]),
        );
        $r = $model->chat($prompt, maxTokens: 4, options: ['template_vars' => ['settings' => 1]]);
        $this->assertSame(
            $model->countTokens('[system:S][user:U]1|<|im_start|>|<|im_end|>'),
            $r->promptTokens(),
        );
        $model->close();
    }

    public function testRaiseExceptionBecomesAnInferenceException(): void
    {
        $model = $this->modelWithTemplate(
            "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok"
        );
        $this->assertSame('ok', $model->renderPrompt(Prompt::user('hi')));
        foreach ([
            'renderPrompt' => fn () => $model->renderPrompt(Prompt::system('s')->withUser('hi')),
            'chat' => fn () => $model->chat(Prompt::system('s')->withUser('hi')),
            'stream' => fn () => $model->stream(Prompt::system('s')->withUser('hi')),
        ] as $call) {
            $this->assertThrows(
                InferenceException::class,
                "the model's chat template refused the conversation: System role not supported",
                $call,
            );
        }
        $model->close();
    }

    public function testATemplateThatIsNotJinjaOrFailsIsReported(): void
    {
        $broken = $this->modelWithTemplate('{% for m in messages %}{{ m.content }}');
        $this->assertThrows(
            InferenceException::class,
            "the model's chat template is not valid Jinja: syntax error",
            fn () => $broken->renderPrompt(Prompt::user('hi')),
        );
        $this->assertNotSame('', $broken->raw('Hello', maxTokens: 2), 'raw() does not need the template');
        $broken->close();
        $failing = $this->modelWithTemplate('{{ messages[0].content.no_such_method() }}');
        $this->assertThrows(
            InferenceException::class,
            "the model's chat template failed: unknown method: string has no method named no_such_method",
            fn () => $failing->chat(Prompt::user('hi')),
        );
        $failing->close();
    }

    public function testAGgufWithoutTemplateUsesLlamaCppsChatMl(): void
    {
        $model = $this->modelWithoutChatTemplate();
        $this->assertNull($model->chatTemplate());
        $this->assertSame('chatml', $model->chatTemplateKind());
        $this->assertSame(self::chatml([['user', 'hi']]), $model->renderPrompt(Prompt::user('hi')));
        $this->assertSame('eos', $model->chat(Prompt::user('Say hi.'), maxTokens: 64)->finishReason());
        $this->assertThrows(
            InferenceException::class,
            'the model has no chat template of its own',
            fn () => $model->renderPrompt(Prompt::user('hi'), ['template_vars' => ['x' => 1]]),
        );
        $model->close();
    }

    /** @return iterable<string, array{array, class-string, string}> */
    public static function badTemplateVars(): iterable
    {
        yield 'not an array' => [['template_vars' => 'x'], InferenceException::class, 'option "template_vars" must be an array of name => value'];
        yield 'a list' => [['template_vars' => [true]], InferenceException::class, 'option "template_vars" must be an array of name => value (e.g. [\'enable_thinking\' => false]); key 0 is not a name'];
        yield 'NAN' => [['template_vars' => ['x' => ['y' => NAN]]], InferenceException::class, 'option "template_vars" cannot be passed to the template: template_vars["x"] holds NAN at /y'];
        yield 'a reserved name' => [['template_vars' => ['messages' => []]], InferenceException::class, 'template variable "messages" is set by the renderer itself and cannot be passed'];
    }

    /** @dataProvider badTemplateVars @group default-model */
    public function testBadTemplateVariablesAreRefused(array $options, string $class, string $message): void
    {
        $this->assertThrows($class, $message, fn () => self::model()->renderPrompt(Prompt::user('hi'), $options));
        $this->assertThrows($class, $message, fn () => self::model()->chat(Prompt::user('hi'), options: $options));
    }

    /** @group default-model */
    public function testRawRefusesTemplateVariables(): void
    {
        $message = 'option "template_vars" applies to the chat template, and raw() completes the text as given';
        $options = ['template_vars' => ['enable_thinking' => false]];
        $this->assertThrows(InferenceException::class, $message, fn () => self::model()->raw('hi', options: $options));
        $this->assertThrows(InferenceException::class, $message, fn () => self::model()->rawStream('hi', options: $options));
        $this->assertThrows(InferenceException::class, $message, fn () => self::model()->rawMany(['hi'], options: $options));
    }
}
