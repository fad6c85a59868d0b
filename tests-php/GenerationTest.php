<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Prompt;

/** Sampling, seeds, the generation options and finish reasons. */
final class GenerationTest extends InferTestCase
{
    private static function funFact(float $temperature = 0.0, int $seed = 1234, array $options = []): string
    {
        return self::model()->chat(Prompt::user('Tell me a fun fact.'), maxTokens: 20, temperature: $temperature, seed: $seed, options: $options)->text();
    }

    public function testGreedyIsDeterministic(): void
    {
        $this->assertSame(self::funFact(), self::funFact());
    }

    public function testSeedDoesNotMatterAtTemperatureZero(): void
    {
        $this->assertSame(self::funFact(seed: 1), self::funFact(seed: 99));
    }

    /** @group engine */
    public function testSameSeedGivesTheSameSample(): void
    {
        $this->assertSame(self::funFact(1.0, 7), self::funFact(1.0, 7));
        $this->assertSame(self::funFact(1.0, -3), self::funFact(1.0, -3));
    }

    /** @group engine */
    public function testDifferentSeedsGiveDifferentSamples(): void
    {
        $samples = array_map(fn (int $seed) => self::funFact(1.0, $seed), [1, 2, 3, 4]);
        $this->assertGreaterThan(1, count(array_unique($samples)), implode("\n", $samples));
        $this->assertNotContains(self::funFact(), $samples, 'sampling at temperature 1 is not greedy');
    }

    /** @return array<string, array{array<string, mixed>}> */
    public static function greedyFilters(): array
    {
        return [
            'top_k 1' => [['top_k' => 1]],
            'tiny top_p' => [['top_p' => 0.0001]],
            'min_p 1.0' => [['min_p' => 1.0]],
        ];
    }

    /**
     * A filter that keeps only the most likely token makes sampling greedy,
     * which shows the filter is applied.
     *
     * @dataProvider greedyFilters
     * @group engine
     */
    public function testFiltersAreAppliedWhenSampling(array $options): void
    {
        $this->assertSame(self::funFact(), self::funFact(1.0, 5, $options));
    }

    public function testFiltersAreIgnoredAtTemperatureZero(): void
    {
        $this->assertSame(self::funFact(), self::funFact(0.0, 1, ['top_k' => 3, 'top_p' => 0.5, 'min_p' => 0.2]));
    }

    /**
     * The first tokens drawn, one per seed, at a temperature so high that the
     * distribution is almost uniform, with top-p and min-p off: what top-k
     * lets through is then all that limits how many different tokens come up.
     *
     * @return list<string>
     */
    private static function firstTokens(int $topK, int $seeds): array
    {
        $out = [];
        for ($seed = 1; $seed <= $seeds; $seed++) {
            $out[] = self::model()->raw('Once upon a time', maxTokens: 1, temperature: 1000.0, seed: $seed, options: ['top_k' => $topK, 'top_p' => 1.0, 'min_p' => 0.0]);
        }
        return $out;
    }

    /**
     * top_k = k lets at most k different tokens come up, whatever the seeds;
     * top_k = 0 lets the whole vocabulary come up, so more different tokens
     * than any k below that number. The vocabulary's size comes from the GGUF.
     */
    public function testTopKZeroDisablesIt(): void
    {
        $vocabulary = self::gguf()['tokenizer.ggml.tokens']['count'];
        $seeds = 120;
        $this->assertGreaterThan(100 * $seeds, $vocabulary, 'a vocabulary much larger than the number of draws');

        // The measure sees top-k: k = 40 (the default) caps the count, though
        // the same draws without it would give far more.
        $this->assertLessThanOrEqual(40, count(array_unique(self::firstTokens(40, $seeds))));

        // With k = 0, near-uniform draws from the whole vocabulary V almost
        // never repeat (about n²/2V repeated pairs in n draws: 0.15 for
        // SmolLM2's 49,152 tokens): far more distinct tokens than the
        // default k (40), or any k up to 100, could allow.
        $distinct = count(array_unique(self::firstTokens(0, $seeds)));
        $this->assertGreaterThan(100, $distinct, "top_k = 0 gave only $distinct distinct first tokens in $seeds draws");
    }

    /** @group engine */
    public function testRepeatPenaltyChangesGreedyOutput(): void
    {
        $prompt = Prompt::system('Reply with JSON only.')->withUser('Tom is 3.')
            ->withAssistant('{"name": "Tom", "age": 3}')->withUser('Ann is 7.');
        $plain = self::model()->chat($prompt, maxTokens: 30)->text();
        $this->assertSame($plain, self::model()->chat($prompt, maxTokens: 30, options: ['repeat_penalty' => 1.0])->text());
        $this->assertNotSame($plain, self::model()->chat($prompt, maxTokens: 30, options: ['repeat_penalty' => 1.5])->text());
    }

    /**
     * @group default-model
     * @group engine
     */
    public function testStopStringEndsGenerationAndIsLeftOut(): void
    {
        $this->assertSame(DefaultModel::COUNTING, self::model()->raw('1, 2, 3, 4, 5, 6,', maxTokens: 20));
        // Greedy output is the same up to the stop string, which is cut off with what follows.
        $this->assertSame(
            substr(DefaultModel::COUNTING, 0, strpos(DefaultModel::COUNTING, ' 9')),
            self::model()->raw('1, 2, 3, 4, 5, 6,', maxTokens: 20, options: ['stop' => [' 9']]),
        );
        $days = Prompt::system('Answer briefly.')->withUser('List the days of the week, separated by commas.');
        $off = ['cache_prompt' => false];
        $full = self::model()->chat($days, maxTokens: 40, options: $off)->text();
        $this->assertStringContainsString('Thursday', $full);
        $r = self::model()->chat($days, maxTokens: 40, options: $off + ['stop' => ['Thursday', 'zzz']]);
        $this->assertSame('stop', $r->finishReason());
        $this->assertSame(substr($full, 0, strpos($full, 'Thursday')), $r->text());
    }

    /**
     * @group default-model
     * @group engine
     */
    public function testEarliestStopStringWins(): void
    {
        // '9' is listed first, '8' comes first in the text: the cut is at '8'.
        $this->assertSame(
            substr(DefaultModel::COUNTING, 0, strpos(DefaultModel::COUNTING, '8')),
            self::model()->raw('1, 2, 3, 4, 5, 6,', maxTokens: 20, options: ['stop' => ['9', '8']]),
        );
    }

    /** @group engine */
    public function testStopStringThatNeverOccursChangesNothing(): void
    {
        // The prompt cache off in both: a prompt found whole in the cache has its last token evaluated alone,
        // which can change llama.cpp's numbers and so the greedy text (seen when flash attention changed).
        $off = ['cache_prompt' => false];
        $r = self::model()->chat(Prompt::user('Say hello.'), maxTokens: 30, options: $off + ['stop' => ['@@@']]);
        $this->assertSame(self::model()->chat(Prompt::user('Say hello.'), maxTokens: 30, options: $off)->text(), $r->text());
        $this->assertNotSame('stop', $r->finishReason());
    }

    /** @group default-model */
    public function testFinishReasonEos(): void
    {
        $r = self::model()->chat(Prompt::system('Answer in one short sentence.')->withUser('What is the capital of France?'), maxTokens: 64);
        $this->assertSame('eos', $r->finishReason());
        $this->assertLessThan(64, $r->tokensGenerated());
    }

    public function testFinishReasonLength(): void
    {
        $r = self::model()->chat(Prompt::user('Write a long story about a dragon.'), maxTokens: 5);
        $this->assertSame('length', $r->finishReason());
        $this->assertSame(5, $r->tokensGenerated());
    }

    /** @return array<string, array{array<mixed>, string}> */
    public static function invalidOptions(): array
    {
        return [
            'unknown key' => [['temperatur' => 1], 'option "temperatur" is not a known option (known: schema, schema_defaults, grammar, stop, top_k, top_p, min_p, repeat_penalty, typical_p, min_keep, top_n_sigma, xtc_probability, xtc_threshold, dynatemp_range, dynatemp_exponent, repeat_last_n, presence_penalty, frequency_penalty, dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers, mirostat, mirostat_tau, mirostat_eta, logit_bias, ignore_eos, samplers, adaptive_target, adaptive_decay, logprobs, top_logprobs, post_sampling_probs, cache_prompt, fast_forward, lookup, timeout, max_reasoning_tokens, template_vars, special_tokens_in_messages, tools, tool_choice, lora)'],
            'load key' => [['n_threads' => 2], 'option "n_threads" is not a known option'],
            'integer key' => [['x'], 'option "0" is an integer key; options are an array keyed by name'],
            'stop string' => [['stop' => 'END'], 'option "stop" must be a list of non-empty strings, got string'],
            'stop with an int' => [['stop' => ['a', 3]], 'option "stop" must be a list of non-empty strings, got array'],
            'stop with keys' => [['stop' => ['k' => 'v']], 'option "stop" must be a list of non-empty strings, got array'],
            'stop with an empty string' => [['stop' => ['']], 'option "stop" must be a list of non-empty strings, got an empty string'],
            'top_k negative' => [['top_k' => -1], 'option "top_k" must be an int >= 0 (0 disables it), got int -1'],
            'top_k float' => [['top_k' => 4.0], 'option "top_k" must be an int >= 0 (0 disables it), got float 4'],
            'top_k too big' => [['top_k' => PHP_INT_MAX], 'option "top_k" must be an int >= 0 (0 disables it), got int'],
            'top_p zero' => [['top_p' => 0.0], 'option "top_p" must be a float greater than 0.0 and at most 1.0, got float 0'],
            'top_p above one' => [['top_p' => 1.5], 'option "top_p" must be a float greater than 0.0 and at most 1.0, got float 1.5'],
            'top_p NaN' => [['top_p' => NAN], 'option "top_p" must be a float greater than 0.0 and at most 1.0, got float NAN'],
            'top_p string' => [['top_p' => '0.9'], 'option "top_p" must be a float greater than 0.0 and at most 1.0, got string'],
            'min_p negative' => [['min_p' => -0.1], 'option "min_p" must be a float between 0.0 and 1.0, got float -0.1'],
            'min_p INF' => [['min_p' => INF], 'option "min_p" must be a float between 0.0 and 1.0, got float INF'],
            'repeat_penalty zero' => [['repeat_penalty' => 0], 'option "repeat_penalty" must be a finite float > 0 (1.0 disables it), got int 0'],
            'repeat_penalty bool' => [['repeat_penalty' => true], 'option "repeat_penalty" must be a finite float > 0 (1.0 disables it), got bool'],
            'cache_prompt int' => [['cache_prompt' => 1], 'option "cache_prompt" must be a bool, got int 1'],
            'cache_prompt string' => [['cache_prompt' => 'yes'], 'option "cache_prompt" must be a bool, got string'],
        ];
    }

    /** @dataProvider invalidOptions */
    public function testInvalidOptionsThrowNamingTheKey(array $options, string $message): void
    {
        $p = Prompt::user('hi');
        $this->assertThrows(InferenceException::class, $message, fn () => self::model()->chat($p, options: $options));
        $this->assertThrows(InferenceException::class, $message, fn () => self::model()->raw('hi', options: $options));
    }

    public function testIntegerValuesAreAcceptedForFloatOptions(): void
    {
        $this->assertSame(self::funFact(), self::funFact(0.0, 1, ['top_p' => 1, 'min_p' => 0, 'repeat_penalty' => 1]));
    }
}
