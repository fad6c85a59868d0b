<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;

/** chat(), raw(), close() and the model's accessors. */
final class ModelTest extends InferTestCase
{
    /** @group default-model */
    public function testChatAnswersWithTheChatTemplate(): void
    {
        $r = self::model()->chat(
            Prompt::system('You are a helpful assistant. Answer in one short sentence.')
                ->withUser('What is the capital of France?'),
            maxTokens: 48,
        );
        $this->assertStringContainsString('Paris', $r->answer());
        $this->assertSame('eos', $r->finishReason());
        // The template wraps the messages: more tokens than the two texts alone.
        $bare = self::model()->countTokens('You are a helpful assistant. Answer in one short sentence.')
            + self::model()->countTokens('What is the capital of France?');
        $this->assertGreaterThan($bare, $r->promptTokens());
    }

    /** @group default-model */
    public function testChatHonoursEarlierTurns(): void
    {
        $prompt = Prompt::system('Reply with JSON only.')
            ->withUser('Tom is 3.')->withAssistant('{"name": "Tom", "age": 3}')
            ->withUser('Ann is 7.');
        $this->assertSame(DefaultModel::ANN, self::model()->chat($prompt, maxTokens: 40)->json());
    }

    /** @group default-model */
    public function testRawCompletesPlainText(): void
    {
        $text = self::model()->raw('1, 2, 3, 4, 5, 6,', maxTokens: 6);
        $this->assertStringStartsWith(' 7, 8', $text);
    }

    /** @group default-model */
    public function testRawIsNotWrappedInTheChatTemplate(): void
    {
        // Through the template, the model answers as an assistant; raw continues the text.
        $raw = self::model()->raw('The capital of France is', maxTokens: 3);
        $this->assertStringStartsWith(' Paris', $raw);
    }

    /** @group default-model */
    public function testAddBosMatchesTheTokenizerWhenTheModelUsesNoBos(): void
    {
        // SmolLM2's tokenizer adds no BOS, so both settings see the same tokens.
        $this->assertFalse(self::gguf()['tokenizer.ggml.add_bos_token'], 'the premise: the GGUF says no BOS');
        $this->assertSame(
            self::model()->raw('Once upon a time', maxTokens: 8, addBos: false),
            self::model()->raw('Once upon a time', maxTokens: 8, addBos: true),
        );
    }

    /** @group default-model */
    public function testAddBosChangesTheInputOfAModelThatUsesBos(): void
    {
        // The same weights with tokenizer.ggml.add_bos_token flipped to true.
        $bytes = file_get_contents(self::modelPath());
        $key = 'tokenizer.ggml.add_bos_token';
        $at = strpos($bytes, $key);
        $this->assertNotFalse($at);
        $valueAt = $at + strlen($key) + 4; // u32 type tag (7 = bool), then the value
        $this->assertSame("\x07\x00\x00\x00\x00", substr($bytes, $at + strlen($key), 5));
        $bytes[$valueAt] = "\x01";
        $model = Model::load($this->tempFile($bytes));
        $with = $model->raw('Once upon a time', maxTokens: 12, addBos: true);
        $without = $model->raw('Once upon a time', maxTokens: 12, addBos: false);
        $this->assertSame(self::model()->raw('Once upon a time', maxTokens: 12), $without);
        $this->assertNotSame($with, $without, 'a leading BOS token changes what the model sees');
        $this->assertSame(
            self::model()->chat(Prompt::user('hi'), maxTokens: 1)->promptTokens() + 1,
            $model->chat(Prompt::user('hi'), maxTokens: 1)->promptTokens(),
            'chat() adds BOS when the tokenizer asks for it',
        );
        $model->close();
    }

    /** @group default-model */
    public function testCountTokens(): void
    {
        $m = self::model();
        $this->assertSame(0, $m->countTokens(''));
        $this->assertSame(DefaultModel::HELLO_WORLD_TOKENS, $m->countTokens('Hello world'));
        $this->assertGreaterThan($m->countTokens('Hello world'), $m->countTokens(str_repeat('Hello world ', 10)));
        $this->assertSame(1, $m->countTokens('<|im_end|>'), 'special tokens are parsed');
    }

    public function testContextLengthIsTheTrainedContext(): void
    {
        $gguf = self::gguf();
        $this->assertSame($gguf[$gguf['general.architecture'] . '.context_length'], self::model()->contextLength());
    }

    public function testChatTemplateIsTheOneStoredInTheGguf(): void
    {
        $stored = self::gguf()['tokenizer.chat_template'] ?? null;
        $this->assertIsString($stored, 'the model file has a chat template');
        $this->assertSame($stored, self::model()->chatTemplate());
    }

    public function testChatTemplateIsNullWhenTheGgufHasNone(): void
    {
        $model = $this->modelWithoutChatTemplate();
        $this->assertNull($model->chatTemplate());
        // chat() then falls back to llama.cpp's built-in ChatML (ChatTemplateTest).
        $this->assertSame('chatml', $model->chatTemplateKind());
        $this->assertNotSame('', $model->raw('Hello', maxTokens: 2), 'raw() still works');
        $model->close();
    }

    public function testCloseIsIdempotentAndLaterCallsThrow(): void
    {
        $model = Model::load(self::modelPath());
        $model->close();
        $model->close();
        $calls = [
            'chat' => fn () => $model->chat(Prompt::user('hi')),
            'raw' => fn () => $model->raw('hi'),
            'countTokens' => fn () => $model->countTokens('hi'),
            'contextLength' => fn () => $model->contextLength(),
            'chatTemplate' => fn () => $model->chatTemplate(),
        ];
        foreach ($calls as $name => $call) {
            $this->assertThrows(InferenceException::class, 'model has been closed', $call);
        }
    }

    public function testResponsesOutliveTheirClosedModel(): void
    {
        $model = Model::load(self::modelPath());
        $r = $model->chat(Prompt::user('Say hi.'), maxTokens: 4);
        $model->close();
        unset($model);
        $this->assertGreaterThan(0, $r->tokensGenerated());
        $this->assertNotSame('', $r->text());
        $this->assertSame($r->text(), self::model()->chat(Prompt::user('Say hi.'), maxTokens: 4)->text());
    }

    /** @return array<string, array{callable(Model): mixed, string}> */
    public static function invalidArguments(): array
    {
        $p = Prompt::user('hi');
        return [
            'chat maxTokens 0' => [fn (Model $m) => $m->chat($p, maxTokens: 0), 'maxTokens must be at least 1, got 0'],
            'chat maxTokens negative' => [fn (Model $m) => $m->chat($p, maxTokens: -5), 'maxTokens must be at least 1, got -5'],
            'raw maxTokens 0' => [fn (Model $m) => $m->raw('hi', maxTokens: 0), 'maxTokens must be at least 1, got 0'],
            'chat nCtx 0' => [fn (Model $m) => $m->chat($p, nCtx: 0), 'nCtx must be at least 1, got 0'],
            'raw nCtx negative' => [fn (Model $m) => $m->raw('hi', nCtx: -1), 'nCtx must be at least 1, got -1'],
            'chat negative temperature' => [fn (Model $m) => $m->chat($p, temperature: -0.5), 'temperature must be a finite number >= 0, got -0.5'],
            'raw NaN temperature' => [fn (Model $m) => $m->raw('hi', temperature: NAN), 'temperature must be a finite number >= 0, got NAN'],
            'raw infinite temperature' => [fn (Model $m) => $m->raw('hi', temperature: INF), 'temperature must be a finite number >= 0, got INF'],
            'nCtx PHP_INT_MAX' => [fn (Model $m) => $m->raw('hi', nCtx: PHP_INT_MAX), 'exceeds the context length the model was trained for ('],
            'prompt longer than nCtx (chat)' => [fn (Model $m) => $m->chat(Prompt::user(str_repeat('word ', 50)), nCtx: 16), 'which does not fit in nCtx = 16'],
            'empty raw prompt' => [fn (Model $m) => $m->raw(''), 'prompt is empty: it encodes to no tokens'],
            'NUL byte in a chat message' => [fn (Model $m) => $m->chat(Prompt::system('ok')->withUser("a\0b")), 'message 1 (user) contains a NUL byte'],
        ];
    }

    /** @dataProvider invalidArguments */
    public function testInvalidArgumentsThrowBeforeGenerating(callable $call, string $message): void
    {
        $this->assertThrows(InferenceException::class, $message, fn () => $call(self::model()));
    }

    /**
     * Messages that quote the default model's numbers: its trained context
     * and a token count.
     *
     * @group default-model
     */
    public function testInvalidArgumentMessagesQuoteTheModelsNumbers(): void
    {
        $this->assertThrows(
            InferenceException::class,
            'nCtx = 100000 exceeds the context length the model was trained for (' . DefaultModel::CONTEXT_LENGTH . ')',
            fn () => self::model()->chat(Prompt::user('hi'), nCtx: 100000),
        );
        $this->assertThrows(
            InferenceException::class,
            'prompt is ' . DefaultModel::FIFTY_WORDS_TOKENS . ' tokens, which does not fit in nCtx = 16',
            fn () => self::model()->raw(str_repeat('word ', 49) . 'word', nCtx: 16),
        );
    }

    public function testMaxTokensPhpIntMaxIsBoundedByTheContext(): void
    {
        $r = self::model()->chat(Prompt::user('Count from 1 to 1000.'), maxTokens: PHP_INT_MAX, nCtx: 64);
        $this->assertSame('length', $r->finishReason());
        $this->assertSame(64, $r->promptTokens() + $r->tokensGenerated(), 'the context holds prompt and output');
    }

    public function testPromptThatExactlyFillsTheContextLeavesNoRoomToGenerate(): void
    {
        $prompt = Prompt::user('Tell me about the sea.');
        $n = self::model()->chat($prompt, maxTokens: 1)->promptTokens();
        $r = self::model()->chat($prompt, maxTokens: 10, nCtx: $n);
        $this->assertSame([$n, 0, '', 'length'], [$r->promptTokens(), $r->tokensGenerated(), $r->text(), $r->finishReason()]);
        $r = self::model()->chat($prompt, maxTokens: 10, nCtx: $n + 1);
        $this->assertSame([1, 'length'], [$r->tokensGenerated(), $r->finishReason()]);
    }
}
