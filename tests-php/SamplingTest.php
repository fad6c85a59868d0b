<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;
use Displace\Infer\Tests\Support\LlamaServer;

require_once __DIR__ . '/support/LlamaServer.php';

/**
 * Every sampler llama-server's /completion takes, in process, judged by
 * llama-server itself (built from the llama.cpp the extension links,
 * flash attention off as the engine runs): with the same seed and values,
 * the extension writes the text the server writes, for each sampler on its
 * own and together, free and under a grammar; the log-probabilities are the
 * server's n_probs; the same options reach a connected llama-server.
 *
 * Under a grammar the comparisons turn fast-forward off: the server samples
 * every token (one draw each), the engine appends forced ones without a
 * draw, so seeded draws part after the first forced token.
 *
 * @group second-model
 */
final class SamplingTest extends InferTestCase
{
    private static ?LlamaServer $server = null;

    private const PROMPT = "Here is a short story about a dragon who learns to bake bread.\n\nOnce upon a time";

    private const GRAMMAR = 'root ::= [A-Za-z ,]{4,60} "."';

    /** Text that repeats itself, for DRY. */
    private const REPEATING = "one two three four five. one two three four five. one two three four five. one two three";

    private static function server(): LlamaServer
    {
        return self::$server ??= new LlamaServer(self::modelPath(), ['-c', '4096', '-np', '1']);
    }

    public static function tearDownAfterClass(): void
    {
        self::$server?->stop();
        self::$server = null;
        parent::tearDownAfterClass();
    }

    /** @var array<string, string> the default chain's texts, by prompt, temperature, seed and grammar */
    private static array $defaults = [];

    /** What the default chain writes (the settings share temperatures and seeds: computed once each). */
    private static function defaultChain(string $prompt, float $temperature, int $seed, array $extra): string
    {
        return self::$defaults[json_encode([$prompt, $temperature, $seed, $extra])] ??= self::model()->raw($prompt,
            maxTokens: 24, temperature: $temperature, seed: $seed, options: $extra + ['fast_forward' => false]);
    }

    /** llama-server's answer to a /completion of $body (its own JSON, written here). */
    private static function complete(array $body): array
    {
        $context = stream_context_create(['http' => [
            'method' => 'POST',
            'header' => "Content-Type: application/json\r\n",
            'content' => json_encode($body + ['cache_prompt' => false], JSON_THROW_ON_ERROR),
            'timeout' => 120,
            'ignore_errors' => true,
        ]]);
        $answer = file_get_contents(self::server()->url . '/completion', false, $context);
        self::assertIsString($answer, 'llama-server answered');
        return json_decode($answer, true, 512, JSON_THROW_ON_ERROR);
    }

    /** The options as llama-server's JSON spells them (logit_bias as [[id or text, bias or false], …]). */
    private static function serverFields(array $options): array
    {
        if (isset($options['logit_bias'])) {
            $options['logit_bias'] = array_map(
                fn ($key, $bias) => [$key, $bias],
                array_keys($options['logit_bias']),
                array_values($options['logit_bias']),
            );
        }
        return $options;
    }

    /**
     * Each sampler alone and some together, with the temperatures they are
     * meant for: name => [options, temperature].
     */
    public static function samplers(): array
    {
        return [
            'defaults, drawing' => [[], 0.8],
            'top_k' => [['top_k' => 5], 1.0],
            'top_p' => [['top_p' => 0.5], 1.0],
            'min_p' => [['min_p' => 0.2], 1.0],
            'typical_p' => [['typical_p' => 0.6], 1.0],
            'typical_p greedy' => [['typical_p' => 0.3], 0.0],
            'min_keep' => [['top_p' => 0.1, 'min_keep' => 4], 1.0],
            'top_n_sigma' => [['top_n_sigma' => 0.5, 'top_k' => 0, 'top_p' => 1.0, 'min_p' => 0.0], 1.5],
            'xtc' => [['xtc_probability' => 0.8, 'xtc_threshold' => 0.05], 1.0],
            'xtc greedy' => [['xtc_probability' => 1.0, 'xtc_threshold' => 0.1], 0.0],
            'dynatemp' => [['dynatemp_range' => 0.6, 'dynatemp_exponent' => 2.0], 0.9],
            'repeat_penalty' => [['repeat_penalty' => 1.4, 'repeat_last_n' => 32], 0.0],
            'presence_penalty' => [['presence_penalty' => 1.5], 0.0],
            'frequency_penalty' => [['frequency_penalty' => 1.2], 0.7],
            'dry' => [['dry_multiplier' => 0.8, 'dry_allowed_length' => 1, 'dry_base' => 2.0], 0.0, self::REPEATING],
            'dry breakers' => [['dry_multiplier' => 1.0, 'dry_sequence_breakers' => ["\n", '.'], 'dry_penalty_last_n' => 16], 0.9, self::REPEATING],
            'mirostat 1' => [['mirostat' => 1, 'mirostat_tau' => 3.0, 'mirostat_eta' => 0.2], 1.0],
            'mirostat 2' => [['mirostat' => 2, 'mirostat_tau' => 4.0], 0.8],
            // 260 is ' the', 17422 ' dragon' (testTokenIdsAreTheOnesNamed checks it with llama-server's /tokenize).
            'logit_bias ids' => [['logit_bias' => [260 => 4.0, 17422 => false]], 0.0],
            'logit_bias text' => [['logit_bias' => [' dragon' => -8.0, ' bread' => false]], 0.9],
            // llama-server's `samplers`: the caller's order; a stage left out is not applied.
            'samplers: temperature first' => [['samplers' => ['temperature', 'top_k', 'top_p'], 'top_k' => 10, 'top_p' => 0.8], 1.3],
            'samplers: letters' => [['samplers' => 'kmt', 'top_k' => 20, 'min_p' => 0.1], 0.9],
            'samplers: aliases' => [['samplers' => ['Top-K', 'nucleus', 'temp'], 'top_k' => 8], 1.0],
            'samplers: no temperature at 0 draws' => [['samplers' => ['top_k', 'min_p'], 'top_k' => 5], 0.0],
            'samplers: none' => [['samplers' => []], 0.8],
            'samplers: penalties last' => [['samplers' => ['top_k', 'temperature', 'penalties'], 'repeat_penalty' => 1.5, 'frequency_penalty' => 0.5], 0.7],
            'samplers: penalties first, greedy' => [['samplers' => ['penalties', 'top_k', 'temperature'], 'repeat_penalty' => 1.5, 'frequency_penalty' => 0.5], 0.0],
            'adaptive_p' => [['samplers' => ['top_k', 'temperature', 'adaptive_p'], 'adaptive_target' => 0.3, 'adaptive_decay' => 0.8], 1.0],
            'together' => [[
                'top_k' => 20, 'top_p' => 0.9, 'min_p' => 0.02, 'typical_p' => 0.95, 'repeat_penalty' => 1.1,
                'presence_penalty' => 0.3, 'frequency_penalty' => 0.2, 'dry_multiplier' => 0.5,
                'xtc_probability' => 0.3, 'xtc_threshold' => 0.2, 'top_n_sigma' => 3.0,
                'logit_bias' => [13 => 1.5],
            ], 0.9],
        ];
    }

    /** @dataProvider samplers */
    public function testTheExtensionWritesWhatLlamaServerWrites(array $options, float $temperature, string $prompt = self::PROMPT): void
    {
        $model = self::model();
        $seeds = $temperature > 0 ? [1, 2] : [1];
        $differs = 0;
        foreach ([null, self::GRAMMAR] as $grammar) {
            foreach ($seeds as $seed) {
                $extra = $grammar === null ? [] : ['grammar' => $grammar];
                $mine = $model->raw($prompt, maxTokens: 24, temperature: $temperature, seed: $seed,
                    options: $options + $extra + ['fast_forward' => false, 'cache_prompt' => false]);
                $theirs = self::complete(self::serverFields($options) + $extra + [
                    'prompt' => $prompt, 'n_predict' => 24, 'temperature' => $temperature, 'seed' => $seed,
                ]);
                $where = ($grammar === null ? 'free' : 'under the grammar') . ", seed $seed";
                $this->assertSame($theirs['content'], $mine, $where);
                $differs += (int) ($mine !== self::defaultChain($prompt, $temperature, $seed, $extra));
            }
        }
        // The sampler did something: at least one text differs from the default chain's.
        if ($options !== []) {
            $this->assertGreaterThan(0, $differs, 'the options changed no text');
        }
    }

    /** The ids the data name are the tokens the comments say, by llama-server's own tokenizer. */
    public function testTokenIdsAreTheOnesNamed(): void
    {
        $answer = file_get_contents(self::server()->url . '/tokenize', false, stream_context_create(['http' => [
            'method' => 'POST', 'header' => "Content-Type: application/json\r\n",
            'content' => json_encode(['content' => ' the dragon']),
        ]]));
        $this->assertSame([260, 17422], json_decode($answer, true)['tokens']);
    }

    /** A connected llama-server gets the same options under the same names: the same text as in process. */
    public function testAConnectedServerSamplesAsTheEngineDoes(): void
    {
        $remote = Model::connect(self::server()->url);
        foreach (['together' => 0.9, 'mirostat 2' => 0.8, 'logit_bias text' => 0.9] as $name => $temperature) {
            $options = self::samplers()[$name][0];
            $mine = self::model()->raw(self::PROMPT, maxTokens: 20, temperature: $temperature, seed: 7,
                options: $options + ['fast_forward' => false]);
            $theirs = $remote->raw(self::PROMPT, maxTokens: 20, temperature: $temperature, seed: 7,
                options: $options + ['cache_prompt' => false]);
            $this->assertSame($mine, $theirs, $name);
        }
    }

    /**
     * `ignore_eos` bans the end-of-generation tokens as llama-server does: a reply that would end runs on to
     * maxTokens, token for token the server's (in process and through connect()).
     */
    public function testIgnoreEosRunsOnAsLlamaServerDoes(): void
    {
        $prompt = "<|im_start|>user\nWhat is 2+2? Answer with a number.<|im_end|>\n<|im_start|>assistant\n";
        $ended = self::model()->rawStream($prompt, maxTokens: 32, options: ['cache_prompt' => false]);
        $this->assertSame('eos', $ended->response()->finishReason(), 'without it the reply ends');
        $this->assertLessThan(32, $ended->response()->tokensGenerated());
        $stream = self::model()->rawStream($prompt, maxTokens: 32, options: ['ignore_eos' => true, 'cache_prompt' => false]);
        $response = $stream->response();
        $this->assertSame(['length', 32], [$response->finishReason(), $response->tokensGenerated()]);
        $theirs = self::complete(['prompt' => $prompt, 'n_predict' => 32, 'temperature' => 0.0, 'ignore_eos' => true]);
        $this->assertSame($theirs['content'], $response->text());
        $remote = Model::connect(self::server()->url);
        $this->assertSame($response->text(), $remote->raw($prompt, maxTokens: 32, options: ['ignore_eos' => true, 'cache_prompt' => false]));
        $this->assertThrows(InferenceException::class,
            'option "ignore_eos" applies to free text: under a schema or a grammar the output ends where they end (the end of generation is the only token they allow there)',
            fn () => self::model()->raw($prompt, maxTokens: 4, options: ['ignore_eos' => true, 'grammar' => 'root ::= "hi"']));
    }

    /**
     * At temperature 0 the temperature stage leaves only the best token: a penalty ordered after it changes
     * nothing, in process as in llama-server (the greedy shortcut counts only the stages before it).
     */
    public function testAStageAfterAGreedyTemperatureChangesNothing(): void
    {
        $options = ['samplers' => ['top_k', 'temperature', 'penalties'], 'repeat_penalty' => 1.5, 'frequency_penalty' => 0.5];
        $mine = self::model()->raw(self::PROMPT, maxTokens: 24, options: $options + ['cache_prompt' => false]);
        $this->assertSame(self::model()->raw(self::PROMPT, maxTokens: 24, options: ['cache_prompt' => false]), $mine);
        $theirs = self::complete(self::serverFields($options) + ['prompt' => self::PROMPT, 'n_predict' => 24, 'temperature' => 0.0]);
        $this->assertSame($theirs['content'], $mine);
    }

    /** A bias never beats the constraint: a token the grammar refuses stays out, however favoured. */
    public function testTheSchemaMaskWinsOverABias(): void
    {
        $yes = self::model()->raw('Answer yes or no: is the sky blue?', maxTokens: 4,
            options: ['grammar' => 'root ::= "yes" | "no"', 'logit_bias' => ['maybe' => 100.0, ' yes' => 100.0]]);
        $this->assertContains($yes, ['yes', 'no']);
        $no = self::model()->raw('Answer yes or no: is the sky blue?', maxTokens: 4,
            options: ['grammar' => 'root ::= "yes" | "no"', 'logit_bias' => ['yes' => false]]);
        $this->assertSame('no', $no);
    }

    /** A bias that bans every token the grammar allows ends the call with a clear error, not a crash. */
    public function testBanningEveryAllowedTokenIsAnError(): void
    {
        try {
            self::model()->raw('Say A.', maxTokens: 4, options: ['grammar' => 'root ::= "A"',
                'logit_bias' => ['A' => false], 'fast_forward' => false]);
            $this->fail('no exception');
        } catch (InferenceException $e) {
            $this->assertSame('the samplers leave no token the grammar allows at this point of the output (a logit_bias bans every one of them)', $e->getMessage());
        }
        $this->assertSame('yes', self::model()->raw('Say yes.', maxTokens: 4, options: ['grammar' => 'root ::= "yes"']),
            'the model is usable after it');
    }

    /** A word greedy decoding writes is never written once banned by text. */
    public function testABanByTextRemovesAWordGreedyWouldWrite(): void
    {
        $plain = self::model()->raw(self::PROMPT, maxTokens: 40);
        $this->assertStringContainsString(' dragon', $plain, 'the word is there to ban');
        $banned = self::model()->raw(self::PROMPT, maxTokens: 40, options: ['logit_bias' => [' dragon' => false]]);
        $this->assertStringNotContainsString(' dragon', $banned);
        $this->assertNotSame($plain, $banned);
    }

    /**
     * Log-probabilities are llama-server's n_probs: the model's own softmax,
     * token by token (ids, bytes and values within 1e-4), the chosen token
     * first under greedy decoding, probabilities adding up to at most 1.
     */
    public function testLogprobsAreLlamaServersNProbs(): void
    {
        $mine = self::model()->rawStream(self::PROMPT, maxTokens: 16,
            options: ['logprobs' => true, 'top_logprobs' => 5, 'fast_forward' => false])->response();
        $theirs = self::complete(['prompt' => self::PROMPT, 'n_predict' => 16, 'temperature' => 0.0, 'n_probs' => 5]);
        $this->assertSame($theirs['content'], $mine->text());
        $lp = $mine->logprobs();
        $this->assertCount(16, $lp);
        $this->assertCount(16, $theirs['completion_probabilities']);
        $text = '';
        foreach ($lp as $i => $entry) {
            $want = $theirs['completion_probabilities'][$i];
            $this->assertSame([$want['id'], $want['bytes']], [$entry['id'], $entry['bytes']], "token $i");
            $this->assertEqualsWithDelta($want['logprob'], $entry['logprob'], 1e-4, "token $i");
            $this->assertFalse($entry['forced']);
            $this->assertCount(5, $entry['top_logprobs']);
            foreach ($entry['top_logprobs'] as $k => $alt) {
                $this->assertSame($want['top_logprobs'][$k]['id'], $alt['id'], "token $i, alternative $k");
                $this->assertEqualsWithDelta($want['top_logprobs'][$k]['logprob'], $alt['logprob'], 1e-4);
            }
            $this->assertSame($entry['id'], $entry['top_logprobs'][0]['id'], 'greedy writes the most likely');
            $sum = array_sum(array_map(fn ($a) => exp($a['logprob']), $entry['top_logprobs']));
            $this->assertLessThanOrEqual(1.0 + 1e-9, $sum);
            $text .= implode('', array_map('chr', $entry['bytes']));
        }
        $this->assertSame($mine->text(), $text, 'the tokens spell the text');
    }

    /**
     * Through the OpenAI API that vLLM and SGLang serve (here llama-server's own /v1 endpoints, the only
     * such server that runs here, addressed as vLLM: 'engine' => 'vllm' makes the extension speak that
     * API): the chat API's logprobs.content and, for rawStream(), the completions endpoint, give what the
     * model in this process gives, value for value.
     */
    public function testLogprobsThroughTheOpenAiApiAreTheInProcessOnes(): void
    {
        $asVllm = Model::connect(self::server()->url, ['engine' => 'vllm']);
        $options = ['logprobs' => true, 'top_logprobs' => 3, 'fast_forward' => false];
        $prompt = Prompt::user('Name three colours.');
        $pairs = [
            'chat' => [$asVllm->chat($prompt, maxTokens: 10, options: $options), self::model()->chat($prompt, maxTokens: 10, options: $options)],
            'rawStream' => [$asVllm->rawStream(self::PROMPT, maxTokens: 10, options: $options)->response(),
                self::model()->rawStream(self::PROMPT, maxTokens: 10, options: $options)->response()],
        ];
        foreach ($pairs as $method => [$theirs, $mine]) {
            $this->assertSame($mine->text(), $theirs->text(), $method);
            $this->assertCount(count($mine->logprobs()), $theirs->logprobs(), $method);
            foreach ($mine->logprobs() as $i => $want) {
                $got = $theirs->logprobs()[$i];
                $this->assertSame($want['bytes'], $got['bytes'], "$method, token $i");
                $this->assertEqualsWithDelta($want['logprob'], $got['logprob'], 1e-4, "$method, token $i");
                $this->assertSame(array_column($want['top_logprobs'], 'bytes'), array_column($got['top_logprobs'], 'bytes'), "$method, token $i");
                foreach ($want['top_logprobs'] as $k => $alt) {
                    $this->assertEqualsWithDelta($alt['logprob'], $got['top_logprobs'][$k]['logprob'], 1e-4, "$method, token $i, alternative $k");
                }
            }
        }
    }

    /** post_sampling_probs: the candidates the chain left, as llama-server reports them when drawing. */
    public function testPostSamplingProbsAreLlamaServers(): void
    {
        $options = ['top_k' => 8, 'top_p' => 0.9];
        $mine = self::model()->rawStream(self::PROMPT, maxTokens: 12, temperature: 0.9, seed: 5,
            options: $options + ['logprobs' => true, 'top_logprobs' => 3, 'post_sampling_probs' => true,
                'fast_forward' => false])->response();
        $theirs = self::complete($options + ['prompt' => self::PROMPT, 'n_predict' => 12, 'temperature' => 0.9,
            'seed' => 5, 'n_probs' => 3, 'post_sampling_probs' => true]);
        $this->assertSame($theirs['content'], $mine->text());
        foreach ($mine->logprobs() as $i => $entry) {
            $want = $theirs['completion_probabilities'][$i];
            $this->assertSame($want['id'], $entry['id']);
            $this->assertEqualsWithDelta($want['prob'], exp($entry['logprob']), 1e-4, "token $i");
            $this->assertSame(array_column($want['top_probs'], 'id'), array_column($entry['top_logprobs'], 'id'));
            $sum = array_sum(array_map(fn ($a) => exp($a['logprob']), $entry['top_logprobs']));
            $this->assertLessThanOrEqual(1.0 + 1e-6, $sum);
        }
    }

    /**
     * score(): the log-probability of a given reply is the sum of its tokens' log-probabilities as generation
     * reports them (the greedy reply, every token sampled, checked against its own logprobs, which
     * testLogprobsAreLlamaServersNProbs checks against llama-server); a less likely reply scores lower.
     */
    public function testScoreIsTheSumOfTheTokensLogprobs(): void
    {
        $prompt = Prompt::user('What is the capital of France? Answer in one word.');
        $r = self::model()->chat($prompt, maxTokens: 24, options: ['logprobs' => true, 'fast_forward' => false]);
        $this->assertSame('eos', $r->finishReason(), 'the whole reply is scored');
        $sum = array_sum(array_column($r->logprobs(), 'logprob'));
        [$greedy, $other] = self::model()->score($prompt, [$r->text(), 'Madrid']);
        // score() evaluates the answer in one batch, generation one token a step: their logits differ in the
        // last bits (other kernels), a few thousandths of a log-probability over the reply.
        $this->assertEqualsWithDelta($sum, $greedy, 2e-2);
        $this->assertLessThan($greedy, $other);
        $this->assertSame([$greedy], self::model()->score($prompt, [$r->text()], options: ['cache_prompt' => false]));
    }

    /**
     * The recipe of docs/sampling.md: a classifier's confidence under an enum, the labels' replies scored and
     * softmaxed; the label the schema-constrained chat writes is the most likely.
     */
    public function testEachLabelsProbabilityUnderAnEnum(): void
    {
        $labels = ['positive', 'negative', 'neutral'];
        $schema = ['type' => 'object', 'properties' => ['sentiment' => ['enum' => $labels]], 'required' => ['sentiment']];
        foreach (['I loved this film, it was wonderful.' => 'positive', 'The food was cold and the waiter was rude.' => 'negative'] as $text => $want) {
            $prompt = Prompt::user("Classify the sentiment of: \"$text\"");
            $scores = self::model()->score($prompt, array_map(fn ($l) => sprintf("{\"sentiment\": \"%s\"}", $l), $labels));
            $max = max($scores);
            $p = array_map(fn ($s) => exp($s - $max), $scores);
            $p = array_combine($labels, array_map(fn ($v) => $v / array_sum($p), $p));
            arsort($p);
            $written = self::model()->chat($prompt, maxTokens: 20, options: ['schema' => $schema])->json()['sentiment'];
            $this->assertSame($written, array_key_first($p), $text);
            $this->assertEqualsWithDelta(1.0, array_sum($p), 1e-9);
        }
    }

    /** score()'s errors: no answers, an empty one, an option it has no use for, a connected model. */
    public function testScoreErrors(): void
    {
        $prompt = Prompt::user('Hi');
        $this->assertThrows(InferenceException::class, 'answers must not be empty', fn () => self::model()->score($prompt, []));
        $this->assertThrows(InferenceException::class, 'answers[1]: text is empty', fn () => self::model()->score($prompt, ['Hello', '']));
        $this->assertThrows(InferenceException::class, 'answers must be a list', fn () => self::model()->score($prompt, ['a' => 'Hello']));
        $this->assertThrows(InferenceException::class, 'option "temperature" is not a known option (known: lora, cache_prompt, timeout, template_vars, special_tokens_in_messages)', fn () => self::model()->score($prompt, ['Hello'], options: ['temperature' => 1.0]));
        $this->assertThrows(InferenceException::class, 'scoring answers is not available through llama-server', fn () => Model::connect(self::server()->url)->score($prompt, ['Hello']));
    }

    /** The pieces of a stream carry the log-probabilities of their tokens: together, the response's. */
    public function testStreamPiecesCarryTheirTokensLogprobs(): void
    {
        $stream = self::model()->rawStream(self::PROMPT, maxTokens: 16, options: ['logprobs' => true, 'top_logprobs' => 2]);
        $entries = [];
        foreach ($stream as $piece) {
            $mine = $stream->logprobs();
            $this->assertIsArray($mine);
            $entries = array_merge($entries, $mine);
        }
        $this->assertNull($stream->logprobs(), 'past the end');
        $this->assertSame($stream->response()->logprobs(), $entries);
        $this->assertNull(self::model()->rawStream(self::PROMPT, maxTokens: 2)->response()->logprobs(), 'not asked');
    }

    /** chatMany(): each response has its own tokens' log-probabilities, as chat() gives them. */
    public function testChatManyReportsLogprobsPerPrompt(): void
    {
        $prompts = [Prompt::user('Name a fruit.'), Prompt::user('Name a colour.')];
        $options = ['logprobs' => true, 'top_logprobs' => 3];
        $many = self::model()->chatMany($prompts, maxTokens: 8, options: $options);
        foreach ($prompts as $i => $prompt) {
            $one = self::model()->chat($prompt, maxTokens: 8, options: $options);
            $this->assertSame($one->text(), $many[$i]->text());
            $this->assertSame(array_column($one->logprobs(), 'id'), array_column($many[$i]->logprobs(), 'id'));
            foreach ($one->logprobs() as $k => $entry) {
                $this->assertEqualsWithDelta($entry['logprob'], $many[$i]->logprobs()[$k]['logprob'], 1e-3);
            }
        }
    }

    /** Forced tokens are certain under the mask; with fast-forward off every token is sampled. */
    public function testForcedTokensReportProbabilityOne(): void
    {
        $schema = ['type' => 'object', 'properties' => ['name' => ['type' => 'string']], 'required' => ['name']];
        $r = self::model()->chat(Prompt::user('Invent a name.'), maxTokens: 16,
            options: ['schema' => $schema, 'logprobs' => true, 'top_logprobs' => 2]);
        $forced = array_values(array_filter($r->logprobs(), fn ($e) => $e['forced']));
        $this->assertNotEmpty($forced);
        foreach ($forced as $e) {
            $this->assertSame(0.0, $e['logprob']);
            $this->assertSame([$e['id']], array_column($e['top_logprobs'], 'id'));
        }
        $off = self::model()->chat(Prompt::user('Invent a name.'), maxTokens: 16,
            options: ['schema' => $schema, 'logprobs' => true, 'fast_forward' => false]);
        $this->assertSame([], array_filter($off->logprobs(), fn ($e) => $e['forced']));
    }

    /**
     * A window longer than the context is the context (llama.cpp sizes its
     * ring buffer by the window: 2147483647 was 8.5 GB for the penalties and
     * 16 GB for DRY, outside memory_limit, and an abort when the allocation
     * failed). Run under a 6 GB address-space limit, the huge windows give
     * the reply of a window of exactly the context.
     */
    public function testAWindowLongerThanTheContextIsTheContext(): void
    {
        $code = <<<'PHP'
            use Displace\Infer\{Model, Prompt};
            $model = Model::load($argv[1]);
            $out = [];
            foreach ([2147483647, 512] as $n) {
                foreach (['repeat_last_n' => ['repeat_penalty' => 1.5], 'dry_penalty_last_n' => ['dry_multiplier' => 0.8]] as $key => $on) {
                    $out["$key $n"] = $model->chat(Prompt::user('Say banana banana banana banana.'), maxTokens: 24, nCtx: 512,
                        options: $on + [$key => $n])->text();
                }
            }
            echo json_encode($out);
            PHP;
        $cmd = ['bash', '-c', 'ulimit -v 6000000 && exec "$@"', 'bash', PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension(),
            '-r', $code, self::modelPath()];
        $out = json_decode($this->commandOutput($cmd), true, flags: JSON_THROW_ON_ERROR);
        foreach (['repeat_last_n', 'dry_penalty_last_n'] as $key) {
            $this->assertSame($out["$key 512"], $out["$key 2147483647"], $key);
        }
    }

    /** Every bad value is refused with its key and range. */
    public static function badOptions(): array
    {
        return [
            'samplers: an unknown name' => [['samplers' => ['top_k', 'top_q']], 'option "samplers" names the sampler \'top_q\', which llama-server does not have (known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature, adaptive_p; or a string of their letters, e.g. "edskypmxt")'],
            'samplers: an unknown letter' => [['samplers' => 'kz'], 'option "samplers" names the sampler \'z\', which llama-server does not have (known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature, adaptive_p; or a string of their letters, e.g. "edskypmxt")'],
            'samplers: infill' => [['samplers' => ['infill']], 'option "samplers" names \'infill\', llama-server\'s fill-in-the-middle stage, which this extension does not offer'],
            'samplers: not a list' => [['samplers' => 5], 'option "samplers" must be a list of sampler names or a string of their letters (known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature, adaptive_p; or a string of their letters, e.g. "edskypmxt"), got int 5'],
            'adaptive_target above 1' => [['adaptive_target' => 2.0], 'option "adaptive_target" must be a float from -1.0 to 1.0 (negative disables it), got float 2'],
            'adaptive_decay 1' => [['adaptive_decay' => 1.0], 'option "adaptive_decay" must be a float between 0.0 and 0.99, got float 1'],
            'typical_p above 1' => [['typical_p' => 1.5], 'option "typical_p" must be a float between 0.0 and 1.0 (1.0 disables it), got float 1.5'],
            'presence_penalty' => [['presence_penalty' => 3], 'option "presence_penalty" must be a float between -2.0 and 2.0 (0.0 disables it), got int 3'],
            'frequency_penalty NaN' => [['frequency_penalty' => NAN], 'option "frequency_penalty" must be a float between -2.0 and 2.0 (0.0 disables it), got float NAN'],
            'repeat_last_n negative' => [['repeat_last_n' => -1], 'option "repeat_last_n" must be an int >= 0 (0 disables the penalties; a window longer than the context is the context), got int -1'],
            'dry_penalty_last_n negative' => [['dry_penalty_last_n' => -1], 'option "dry_penalty_last_n" must be an int >= 0 (0 disables DRY; a window longer than the context is the context), got int -1'],
            'samplers: a stage twice' => [['samplers' => ['top_k', 'dry', 'temperature', 'DRY']], 'option "samplers" names the sampler \'dry\' twice: each stage of the chain applies once'],
            'samplers: a letter repeated' => [['samplers' => str_repeat('d', 300)], 'option "samplers" names the sampler \'dry\' twice: each stage of the chain applies once'],
            'samplers: a NUL letter' => [['samplers' => "k\0"], 'option "samplers" names the sampler \'\\0\', which llama-server does not have'],
            'dry breakers: too many' => [['dry_sequence_breakers' => array_map(strval(...), range(1, 33))], 'option "dry_sequence_breakers" must be a non-empty list of at most 32 non-empty strings without NUL bytes, got array'],
            'min_keep float' => [['min_keep' => 1.5], 'option "min_keep" must be an int >= 0, got float 1.5'],
            'xtc_threshold' => [['xtc_threshold' => -0.1], 'option "xtc_threshold" must be a float between 0.0 and 1.0 (above 0.5 disables it), got float -0.1'],
            'dry_base below 1' => [['dry_base' => 0.5], 'option "dry_base" must be a float >= 1.0, got float 0.5'],
            'dry_allowed_length' => [['dry_allowed_length' => -2], 'option "dry_allowed_length" must be an int >= 0, got int -2'],
            'dry breakers empty' => [['dry_sequence_breakers' => []], 'option "dry_sequence_breakers" must be a non-empty list of at most 32 non-empty strings without NUL bytes, got array'],
            'dry breakers NUL' => [['dry_sequence_breakers' => ["a\0b"]], 'option "dry_sequence_breakers" must be a non-empty list of at most 32 non-empty strings without NUL bytes'],
            'mirostat 3' => [['mirostat' => 3], 'option "mirostat" must be 0, 1 or 2 (0 disables it), got int 3'],
            'mirostat_tau alone' => [['mirostat_tau' => 4.0], 'option "mirostat_tau" applies to mirostat: add \'mirostat\' => 1 or 2, or leave it out'],
            'mirostat_eta range' => [['mirostat' => 2, 'mirostat_eta' => 2.0], 'option "mirostat_eta" must be a float between 0.0 and 1.0, got float 2'],
            'top_n_sigma' => [['top_n_sigma' => -3.0], 'option "top_n_sigma" must be a float, <= 0 disables it (-1.0 is llama-server\'s off), got float -3'],
            'dynatemp_range' => [['dynatemp_range' => -1.0], 'option "dynatemp_range" must be a float >= 0.0 (0.0 disables it), got float -1'],
            'logit_bias not array' => [['logit_bias' => 5], 'option "logit_bias" must be an array of token id or text => bias'],
            'logit_bias too big' => [['logit_bias' => [5 => 150]], 'option "logit_bias" [5] must be a number from -100 to 100, or false to ban it, got int 150'],
            'logit_bias true' => [['logit_bias' => ['x' => true]], 'option "logit_bias" ["x"] must be a number from -100 to 100, or false to ban it, got bool'],
            'logit_bias empty text' => [['logit_bias' => ['' => -1]], 'option "logit_bias" names an empty text'],
            'logit_bias id too big for the model' => [['logit_bias' => [49152 => -1]], 'option "logit_bias" names token 49152, which is not in this model\'s vocabulary (ids 0 to 49151)'],
            'logit_bias negative id' => [['logit_bias' => [-1 => -1]], 'option "logit_bias" names token -1, which is not in this model\'s vocabulary (ids 0 to 49151)'],
            'top_logprobs 21' => [['logprobs' => true, 'top_logprobs' => 21], 'option "top_logprobs" must be an int from 0 to 20, got int 21'],
            'top_logprobs alone' => [['top_logprobs' => 3], 'option "top_logprobs" applies to log-probabilities: add \'logprobs\' => true'],
            'post_sampling_probs alone' => [['post_sampling_probs' => true], 'option "post_sampling_probs" applies to log-probabilities: add \'logprobs\' => true'],
            'logprobs not bool' => [['logprobs' => 1], 'option "logprobs" must be a bool, got int 1'],
        ];
    }

    /** raw() returns a string: log-probabilities are refused there, with the way to get them. */
    public function testRawRefusesLogprobsAndSaysWhereTheyAre(): void
    {
        foreach ([fn () => self::model()->raw('Hi', maxTokens: 2, options: ['logprobs' => true]),
            fn () => self::model()->rawMany(['Hi'], maxTokens: 2, options: ['logprobs' => true])] as $call) {
            try {
                $call();
                $this->fail('no exception');
            } catch (InferenceException $e) {
                $this->assertSame('option "logprobs" applies to calls that return a Response (chat(), stream(), rawStream(), chatMany()); raw() and rawMany() return strings: use rawStream($prompt, ...)->response()->logprobs()', $e->getMessage());
            }
        }
    }

    /** @dataProvider badOptions */
    public function testBadSamplerValuesAreRefusedWithTheKeyAndRange(array $options, string $message): void
    {
        try {
            self::model()->raw('Hi', maxTokens: 2, options: $options);
            $this->fail('no exception');
        } catch (InferenceException $e) {
            $this->assertStringStartsWith($message, $e->getMessage());
        }
    }
}
