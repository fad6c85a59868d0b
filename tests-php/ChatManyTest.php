<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;
use Displace\Infer\Response;

/**
 * Model::chatMany() / rawMany(): many prompts decoded together as parallel
 * sequences of one context. Each result is judged against chat() / raw()
 * on a second model loaded for that purpose, with cache_prompt off, so that
 * the reference is an independent path through the single-sequence loop.
 */
final class ChatManyTest extends InferTestCase
{
    private static ?Model $reference = null;

    private static function reference(): Model
    {
        return self::$reference ??= Model::load(self::modelPath());
    }

    private const FILLER = 'The harbour town grew from a fishing village into a trading port over three centuries. ';

    /** @return list<Prompt> eight prompts, from a few tokens to several hundred */
    private static function freePrompts(): array
    {
        $prompts = [];
        foreach ([0, 1, 3, 6, 10, 16, 24, 34] as $i => $repeat) {
            $prompts[] = Prompt::system('You are a concise assistant.')
                ->withUser(str_repeat(self::FILLER, $repeat) . "Question $i: what is a harbour? Answer in one sentence.");
        }
        return $prompts;
    }

    /** @return array<string, mixed> what a chat() result is compared on */
    private static function summary(Response $r): array
    {
        return [
            'text' => $r->text(),
            'finish' => $r->finishReason(),
            'generated' => $r->tokensGenerated(),
            'prompt' => $r->promptTokens(),
        ];
    }

    /**
     * chatMany() of $prompts equals chat() of each prompt alone.
     *
     * @param list<Prompt> $prompts
     * @return list<Response>
     */
    private function assertSameAsChat(array $prompts, int $maxTokens, array $options = [], float $temperature = 0.0): array
    {
        $many = self::model()->chatMany($prompts, $maxTokens, temperature: $temperature, options: $options);
        $this->assertCount(count($prompts), $many);
        unset($options['parallel']);
        foreach ($prompts as $i => $prompt) {
            $alone = self::reference()->chat($prompt, $maxTokens, temperature: $temperature, options: $options + ['cache_prompt' => false]);
            $this->assertSame(self::summary($alone), self::summary($many[$i]), "prompt $i");
        }
        return $many;
    }

    /** @group slow */
    public function testFreePromptsOfDifferentLengthsGiveWhatChatGivesForEachAlone(): void
    {
        $prompts = self::freePrompts();
        $many = $this->assertSameAsChat($prompts, 32);
        $long = array_filter($many, fn (Response $r) => $r->promptTokens() > 256);
        $this->assertGreaterThanOrEqual(2, count($long), 'at least two prompts past 256 tokens');
        $this->assertGreaterThan(1, count(array_unique(array_map(fn (Response $r) => $r->text(), $many))));
    }

    /** @group engine */
    public function testStopStringsEndEachPromptAsChatDoes(): void
    {
        $prompts = array_map(fn (string $q) => Prompt::user($q), [
            'List three colours, separated by commas.',
            'Write two sentences about the sea.',
            'Count from one to ten in words.',
            'Name a fruit.',
        ]);
        $many = $this->assertSameAsChat($prompts, 40, ['stop' => [',', '.']]);
        $reasons = array_map(fn (Response $r) => $r->finishReason(), $many);
        $this->assertContains('stop', $reasons, implode(', ', $reasons));
    }

    public function testSchemaConstrainedPromptsGiveChatsJsonForEach(): void
    {
        $schema = ['type' => 'object', 'properties' => [
            'name' => ['type' => 'string', 'maxLength' => 20],
            'age' => ['type' => 'integer', 'minimum' => 0, 'maximum' => 150],
        ]];
        $prompts = array_map(fn (string $who) => Prompt::system('Extract the data as JSON.')->withUser($who), [
            'Maria is 31 years old.',
            'Tom, aged 7, plays football.',
            'The oldest person in the village, Agnes, turned 102 this week and celebrated with her family.',
        ]);
        $many = $this->assertSameAsChat($prompts, 64, ['schema' => $schema]);
        foreach ($many as $i => $r) {
            $this->assertSame('eos', $r->finishReason(), "prompt $i: " . $r->text());
            $data = json_decode($r->answer(), true, flags: JSON_THROW_ON_ERROR);
            $this->assertSame(['name', 'age'], array_keys($data), "prompt $i: " . $r->text());
        }
    }

    /** @group engine */
    public function testGrammarPromptsGiveChatsOutputForEach(): void
    {
        $grammar = 'root ::= ("yes" | "no") " because " [a-z ]{1,40}';
        $prompts = array_map(fn (string $q) => Prompt::user($q), [
            'Is the sky blue?',
            'Is fire cold?',
            'Can fish swim? Explain briefly.',
        ]);
        $many = $this->assertSameAsChat($prompts, 24, ['grammar' => $grammar]);
        foreach ($many as $i => $r) {
            $this->assertMatchesRegularExpression('/^(yes|no) because [a-z ]*$/', $r->text(), "prompt $i");
        }
    }

    /**
     * The batches' refill, which no PHP version changes.
     *
     * @group engine
     */
    public function testMorePromptsThanParallelRefillFinishedSequences(): void
    {
        $prompts = array_slice(self::freePrompts(), 0, 7);
        $this->assertSameAsChat($prompts, 12, ['parallel' => 3]);
    }

    /**
     * 32 prompts of ~55 tokens do not fit one 512-token batch: prompts are
     * split across batches, and the budget of a batch runs out at a prompt's
     * last token. A sequence that got no room must not take the logits of the
     * one before it (prompt 9 once did).
     * @group slow
     */
    public function testPromptsSplitAcrossBatchesGiveChatsOutputForEach(): void
    {
        $prompts = array_map(
            fn (int $i) => Prompt::user("Record $i. List the numbers from $i to " . ($i + 500) . ', separated by commas, and nothing else.' . str_repeat(' Be exact.', 7)),
            range(0, 31),
        );
        $this->assertSameAsChat($prompts, 12, ['parallel' => 32]);
    }

    /** @group engine */
    public function testOneSequenceAtATimeStillGivesEveryResult(): void
    {
        $prompts = array_slice(self::freePrompts(), 0, 3);
        $this->assertSameAsChat($prompts, 8, ['parallel' => 1]);
    }

    /** @group engine */
    public function testSamplingGivesEachPromptWhatChatGivesWithTheSameSeed(): void
    {
        $prompts = array_slice(self::freePrompts(), 0, 4);
        $this->assertSameAsChat($prompts, 16, [], 0.9);
    }

    /**
     * The binding's side of rawMany() (what the PHPs besides the machine's run; the batching itself is
     * the engine's test below): strings in, one string per prompt, in order, with addBos passed through.
     */
    public function testRawManyReturnsRawsTextForEachPromptInOrder(): void
    {
        $prompts = ['The capital of France is', '1, 2, 3,'];
        $this->assertSame(
            array_map(fn (string $p) => self::reference()->raw($p, 6, addBos: false, options: ['cache_prompt' => false]), $prompts),
            self::model()->rawMany($prompts, 6, addBos: false),
        );
    }

    /** @group engine */
    public function testRawManyGivesWhatRawGivesForEach(): void
    {
        $prompts = ['Once upon a time', 'The capital of France is', str_repeat('one two three ', 90) . 'four', '1, 2, 3,'];
        $many = self::model()->rawMany($prompts, 20);
        $alone = array_map(fn (string $p) => self::reference()->raw($p, 20, options: ['cache_prompt' => false]), $prompts);
        $this->assertSame($alone, $many);
        $withoutBos = self::model()->rawMany($prompts, 20, addBos: false, options: ['stop' => ["\n"]]);
        $aloneWithoutBos = array_map(fn (string $p) => self::reference()->raw($p, 20, addBos: false, options: ['stop' => ["\n"], 'cache_prompt' => false]), $prompts);
        $this->assertSame($aloneWithoutBos, $withoutBos);
    }

    /**
     * Far more prompts than a context holds sequences: the batches refill over and over (more than sixty
     * rounds of the default parallel 32), and every result lands in its place.
     *
     * @group slow
     */
    public function testThousandsOfPromptsRunThroughACappedContext(): void
    {
        $prompts = [];
        for ($i = 0; $i < 2000; $i++) {
            $prompts[] = (string) ($i % 10);
        }
        // One token each (no BOS): the batching is what is tested, and half
        // the tokens halve the test's time.
        $many = self::model()->rawMany($prompts, 1, 64, addBos: false);
        $this->assertCount(2000, $many);
        $alone = [];
        for ($d = 0; $d < 10; $d++) {
            $alone[] = self::reference()->raw((string) $d, 1, 64, addBos: false, options: ['cache_prompt' => false]);
        }
        foreach ($many as $i => $text) {
            $this->assertSame($alone[$i % 10], $text, "prompt $i");
        }
    }

    public function testEmptyListIsRejected(): void
    {
        $this->assertThrows(InferenceException::class, 'prompts must not be empty', fn () => self::model()->chatMany([]));
        $this->assertThrows(InferenceException::class, 'prompts must not be empty', fn () => self::model()->rawMany([]));
    }

    public function testAnElementThatIsNotAPromptIsNamedWithItsType(): void
    {
        $this->assertThrows(
            InferenceException::class,
            'prompts[1] must be a Displace\Infer\Prompt, got string',
            fn () => self::model()->chatMany([Prompt::user('hi'), 'hello']),
        );
        $this->assertThrows(
            InferenceException::class,
            'prompts[0] must be a Displace\Infer\Prompt, got an object of class stdClass',
            fn () => self::model()->chatMany([new \stdClass()]),
        );
    }

    public function testAnElementThatIsNotAStringIsNamedWithItsType(): void
    {
        $this->assertThrows(
            InferenceException::class,
            'prompts[2] must be a string, got int 5',
            fn () => self::model()->rawMany(['a', 'b', 5]),
        );
        $this->assertThrows(
            InferenceException::class,
            'prompts[1] is not valid UTF-8 (invalid byte at offset 1)',
            fn () => self::model()->rawMany(['a', "b\xFF"]),
        );
    }

    public function testAPromptOverTheContextIsNamedBeforeAnyDecoding(): void
    {
        $long = str_repeat('word ', 300);
        $tokens = self::model()->countTokens($long);
        $this->assertThrows(
            InferenceException::class,
            "prompt 2 is $tokens tokens, which does not fit in nCtx = 128; raise nCtx or shorten the prompt",
            fn () => self::model()->rawMany(['short', 'also short', $long], 8, 128, addBos: false),
        );
    }

    public function testArraysThatAreNotListsAreRejected(): void
    {
        $this->assertThrows(
            InferenceException::class,
            'prompts must be a list (keys 0, 1, 2, ... in order), but entry 0 has key "a"',
            fn () => self::model()->rawMany(['a' => 'x', 'b' => 'y']),
        );
        $this->assertThrows(
            InferenceException::class,
            'prompts must be a list (keys 0, 1, 2, ... in order), but entry 1 has key 5',
            fn () => self::model()->chatMany([Prompt::user('a'), 5 => Prompt::user('b')]),
        );
    }

    public function testParallelMustBeAPositiveIntWithinTheLimit(): void
    {
        foreach ([0, 257, '4', 2.0] as $bad) {
            $this->assertThrows(
                InferenceException::class,
                'option "parallel" must be an int between 1 and 256',
                fn () => self::model()->rawMany(['a'], 1, options: ['parallel' => $bad]),
            );
        }
    }

    public function testUnknownOptionsAreNamedWithTheKeysOfTheManyMethods(): void
    {
        $this->assertThrows(
            InferenceException::class,
            'option "paralel" is not a known option (known: schema, schema_defaults, grammar, stop, top_k, top_p, min_p, repeat_penalty, typical_p, min_keep, top_n_sigma, xtc_probability, xtc_threshold, dynatemp_range, dynatemp_exponent, repeat_last_n, presence_penalty, frequency_penalty, dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers, mirostat, mirostat_tau, mirostat_eta, logit_bias, ignore_eos, samplers, adaptive_target, adaptive_decay, logprobs, top_logprobs, post_sampling_probs, cache_prompt, fast_forward, lookup, timeout, max_reasoning_tokens, template_vars, special_tokens_in_messages, tools, tool_choice, lora, parallel)',
            fn () => self::model()->chatMany([Prompt::user('a')], options: ['paralel' => 2]),
        );
        $this->assertThrows(
            InferenceException::class,
            'option "parallel" is not a known option',
            fn () => self::model()->chat(Prompt::user('a'), options: ['parallel' => 2]),
        );
    }

    public function testPositionalArgumentsAreCheckedAsInChat(): void
    {
        $this->assertThrows(InferenceException::class, 'maxTokens must be at least 1, got 0', fn () => self::model()->rawMany(['a'], 0));
        $this->assertThrows(InferenceException::class, 'temperature must be a finite number >= 0', fn () => self::model()->chatMany([Prompt::user('a')], temperature: -1.0));
    }

    public function testAClosedModelRefusesBothMethods(): void
    {
        $model = Model::load(self::modelPath());
        $model->close();
        $this->assertThrows(InferenceException::class, 'model has been closed', fn () => $model->chatMany([Prompt::user('a')]));
        $this->assertThrows(InferenceException::class, 'model has been closed', fn () => $model->rawMany(['a']));
    }
}
