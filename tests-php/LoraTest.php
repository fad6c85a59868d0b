<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\ModelLoadException;
use Displace\Infer\Prompt;
use Displace\Infer\Tests\Support\LlamaServer;

use function Displace\Infer\Tests\Support\gguf_bytes;

require_once __DIR__ . '/support/LlamaServer.php';
require_once __DIR__ . '/support/gguf.php';

/**
 * LoRA adapters loaded with a model and chosen per call, judged by
 * llama-server started with `--lora` (built from the llama.cpp the extension
 * links) and by the base model itself. The adapter is the one `make
 * lora-model` writes for SmolLM2 (scripts/make-test-lora.py): it pushes the
 * model towards " banana", and changes layer 0's values, so that the keys
 * and values of a prompt depend on it.
 *
 * @group second-model
 */
final class LoraTest extends InferTestCase
{
    private const NAME = 'banana';

    private const PROMPTS = ['The weather today is', 'My favourite fruit is', 'Once upon a time, in a small village,'];

    private static ?LlamaServer $server = null;

    private static ?Model $adapted = null;

    private static ?Model $base = null;

    public static function loraPath(): string
    {
        $path = getenv('INFER_LORA_MODEL') ?: dirname(__DIR__) . '/models/SmolLM2-135M-test-lora.gguf';
        if (!is_file($path)) {
            self::fail("the test adapter is not at $path: run `make lora-model` or set INFER_LORA_MODEL");
        }
        return $path;
    }

    /** The default model with the adapter at scale 1, named self::NAME. */
    private static function adapted(): Model
    {
        return self::$adapted ??= Model::load(self::modelPath(), ['lora' => [['path' => self::loraPath(), 'name' => self::NAME]]]);
    }

    /** The default model, loaded without adapters (a model of its own, not the shared test model). */
    private static function base(): Model
    {
        return self::$base ??= Model::load(self::modelPath());
    }

    private static function server(): LlamaServer
    {
        return self::$server ??= new LlamaServer(self::modelPath(), ['--lora', self::loraPath(), '-c', '2048', '-np', '1']);
    }

    public static function tearDownAfterClass(): void
    {
        self::$server?->stop();
        self::$server = null;
        self::$adapted = null;
        self::$base = null;
        parent::tearDownAfterClass();
    }

    /** llama-server's greedy completion of $prompt, with its per-request `lora` list. */
    private static function complete(string $prompt, array $lora, int $n = 24): string
    {
        $body = ['prompt' => $prompt, 'n_predict' => $n, 'temperature' => 0.0, 'cache_prompt' => false, 'lora' => $lora];
        $answer = file_get_contents(self::server()->url . '/completion', false, stream_context_create(['http' => [
            'method' => 'POST',
            'header' => "Content-Type: application/json\r\n",
            'content' => json_encode($body, JSON_THROW_ON_ERROR),
            'timeout' => 120,
        ]]));
        self::assertIsString($answer, 'llama-server answered');
        return json_decode($answer, true, 512, JSON_THROW_ON_ERROR)['content'];
    }

    private static function chatPrompt(string $question): Prompt
    {
        return Prompt::system(str_repeat('You are a careful assistant who answers briefly and plainly. ', 6))
            ->withUser($question);
    }

    /** A reply and its log-probabilities (top 5), as data to compare. */
    private static function reply(Model $model, Prompt $prompt, array $options): array
    {
        $r = $model->chat($prompt, maxTokens: 12, options: $options + ['logprobs' => true, 'top_logprobs' => 5]);
        return ['text' => $r->text(), 'logprobs' => $r->logprobs()];
    }

    /** At scale 0 (or with none chosen) the graph is the base model's: the same tokens and the same numbers, bit for bit. */
    public function testScaleZeroIsExactlyTheBaseModel(): void
    {
        $prompt = self::chatPrompt('Name a fruit.');
        $base = self::reply(self::base(), $prompt, ['cache_prompt' => false]);
        foreach (['none' => [], 'scale 0' => [self::NAME => 0.0]] as $case => $choice) {
            $this->assertSame($base, self::reply(self::adapted(), $prompt, ['lora' => $choice, 'cache_prompt' => false]), $case);
        }
        // The adapter at its load-time scale does change the reply (else the comparison above proves nothing).
        $this->assertNotSame($base['text'], self::reply(self::adapted(), $prompt, ['cache_prompt' => false])['text']);
    }

    /** Greedy text under the adapter at several scales is llama-server's with `--lora` and the same per-request scale. */
    public function testTheExtensionWritesWhatLlamaServerWritesWithTheAdapter(): void
    {
        $banana = 0;
        foreach (self::PROMPTS as $prompt) {
            foreach ([1.0, 0.5, 2.0] as $scale) {
                $mine = self::adapted()->raw($prompt, maxTokens: 24, options: ['lora' => [self::NAME => $scale], 'cache_prompt' => false]);
                $theirs = self::complete($prompt, [['id' => 0, 'scale' => $scale]]);
                $this->assertSame($theirs, $mine, "'$prompt' at scale $scale");
                $banana += substr_count($mine, ' banana');
            }
            // The server's adapter at scale 0 is the base model, as in process.
            $this->assertSame(self::complete($prompt, [['id' => 0, 'scale' => 0.0]]), self::base()->raw($prompt, maxTokens: 24));
        }
        $this->assertGreaterThan(3, $banana, 'the adapter writes its word');
    }

    /**
     * The adapter favours its word over what the base model would say more, the larger its scale: the
     * difference of their logits (log-probabilities of one-token replies, so the normaliser cancels) grows
     * strictly, from exactly the base model's at 0; at scale 1 the word is all but certain.
     */
    public function testTheEffectGrowsWithTheScale(): void
    {
        foreach (['What should I eat for breakfast?', 'Tell me about the weather.'] as $question) {
            $prompt = self::chatPrompt($question);
            $first = self::base()->chat($prompt, maxTokens: 1, options: ['logprobs' => true])->logprobs()[0]['token'];
            $this->assertSame(1, self::base()->countTokens($first), "the base model's choice '$first' is one token");
            $lead = [];
            $atScale = [];
            // From 0.25 on: below about 0.15 the base model's own activations, which the adapter's last
            // projection reads too, outweigh its push (scripts/make-test-lora.py).
            foreach ([0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0] as $scale) {
                $atScale[(string) $scale] = self::adapted()->score($prompt, [' banana', $first], options: ['lora' => [self::NAME => $scale]]);
                $lead[] = $atScale[(string) $scale][0] - $atScale[(string) $scale][1];
            }
            $this->assertSame(self::base()->score($prompt, [' banana', $first]), $atScale['0']);
            for ($i = 1; $i < count($lead); $i++) {
                $this->assertGreaterThan($lead[$i - 1], $lead[$i], "$question, step $i: " . json_encode($lead));
            }
            $this->assertGreaterThan(log(0.99), $atScale['1'][0], $question);
        }
    }

    /**
     * One model serves calls with and without the adapter in any order, its caches on: each call gives what a
     * fresh model gives it alone. The prompts share a long system prompt, so a prefix computed under the other
     * set would be reused if the caches did not tell sets apart (layer 0's values differ under the adapter).
     */
    public function testSwitchingAdaptersPerCallChangesNothingForOtherCalls(): void
    {
        $fresh = [
            'base' => Model::load(self::modelPath()),
            'adapter' => Model::load(self::modelPath(), ['lora' => [['path' => self::loraPath(), 'name' => self::NAME]]]),
            'half' => Model::load(self::modelPath(), ['lora' => [['path' => self::loraPath(), 'name' => self::NAME, 'scale' => 0.5]]]),
        ];
        $choices = ['base' => [], 'adapter' => [self::NAME => 1.0], 'half' => [self::NAME => 0.5]];
        $calls = [
            ['base', 'Name a fruit.'], ['adapter', 'Name a fruit.'], ['base', 'Name a colour.'],
            ['adapter', 'Name a colour.'], ['half', 'Name a fruit.'], ['base', 'Name a fruit.'],
            ['adapter', 'Name a fruit.'], ['adapter', 'Name an animal.'], ['base', 'Name an animal.'],
        ];
        $shared = self::adapted();
        foreach ($calls as $i => [$set, $question]) {
            $prompt = self::chatPrompt($question);
            $expected = self::reply($fresh[$set], $prompt, ['cache_prompt' => false]);
            $got = self::reply($shared, $prompt, ['lora' => $choices[$set]]);
            $where = "call $i ($set, $question)";
            $this->assertSame($expected['text'], $got['text'], $where);
            // Reused prefixes are evaluated in other batches than a whole prompt: the numbers agree to the
            // kernels' rounding, far closer than a prefix computed under the other adapters would give.
            foreach ($expected['logprobs'] as $t => $entry) {
                $this->assertEqualsWithDelta($entry['logprob'], $got['logprobs'][$t]['logprob'], 2e-3, "$where, token $t");
            }
        }
        // And the same from chatMany(), one set for all its prompts, and from a stream.
        $prompts = [self::chatPrompt('Name a fruit.'), self::chatPrompt('Name a colour.')];
        foreach ($choices as $set => $choice) {
            $many = $shared->chatMany($prompts, maxTokens: 12, options: ['lora' => $choice]);
            foreach ($prompts as $j => $prompt) {
                $this->assertSame(self::reply($fresh[$set], $prompt, ['cache_prompt' => false])['text'], $many[$j]->text(), "chatMany, $set, prompt $j");
            }
            $stream = $shared->stream($prompts[0], maxTokens: 12, options: ['lora' => $choice]);
            $text = '';
            foreach ($stream as $piece) {
                $text .= $piece;
            }
            $this->assertSame(self::reply($fresh[$set], $prompts[0], ['cache_prompt' => false])['text'], $text, "stream, $set");
        }
    }

    /**
     * With 'lora_contexts' => 2, calls that alternate between two adapter sets each keep a context of their own:
     * a call finds its prompt still in its set's cache after a call under the other set (no context was switched,
     * so nothing was emptied or reserved again), and every reply equals a fresh model's. The prompt is shorter than
     * the prompt cache's 32 tokens, so nothing else could have kept it: with the default (one context, switched to
     * each call's set) the same alternation evaluates the whole prompt every time. chatMany() keeps one context per
     * set the same way, and its replies are a fresh model's too.
     */
    public function testAContextPerAdapterSetKeepsEachSetsPromptAcrossSwitches(): void
    {
        $prompt = Prompt::system('Be brief.')->withUser('Name a fruit.');
        $adapters = ['lora' => [['path' => self::loraPath(), 'name' => self::NAME]]];
        $fresh = [];
        foreach (['base' => [], 'adapter' => [self::NAME => 1.0]] as $set => $choice) {
            $fresh[$set] = Model::load(self::modelPath(), $adapters)->chat($prompt, maxTokens: 8, options: ['lora' => $choice])->text();
        }
        $this->assertNotSame($fresh['base'], $fresh['adapter'], 'the adapter changes the reply');
        $calls = ['base', 'adapter', 'base', 'adapter', 'base'];
        $choices = ['base' => [], 'adapter' => [self::NAME => 1.0]];
        foreach ([1 => 'one context', 2 => 'a context per set'] as $contexts => $case) {
            $model = Model::load(self::modelPath(), $adapters + ['lora_contexts' => $contexts]);
            $cached = [];
            foreach ($calls as $i => $set) {
                $r = $model->chat($prompt, maxTokens: 8, options: ['lora' => $choices[$set]]);
                $this->assertSame($fresh[$set], $r->text(), "$case, call $i ($set)");
                $cached[] = $r->cachedTokens();
                $promptTokens = $r->promptTokens();
            }
            $this->assertLessThan(32, $promptTokens, 'the prompt cache would not keep it');
            $expected = $contexts === 1 ? [0, 0, 0, 0, 0] : [0, 0, $promptTokens, $promptTokens, $promptTokens];
            $this->assertSame($expected, $cached, $case);
        }
        $model = Model::load(self::modelPath(), $adapters + ['lora_contexts' => 2]);
        $prompts = [Prompt::user('Name a fruit.'), Prompt::user('Name a colour.')];
        $freshMany = [];
        foreach ($choices as $set => $choice) {
            $freshMany[$set] = array_map(fn ($r) => $r->text(), Model::load(self::modelPath(), $adapters)->chatMany($prompts, maxTokens: 8, options: ['lora' => $choice]));
        }
        foreach ($calls as $i => $set) {
            $got = array_map(fn ($r) => $r->text(), $model->chatMany($prompts, maxTokens: 8, options: ['lora' => $choices[$set]]));
            $this->assertSame($freshMany[$set], $got, "chatMany, call $i ($set)");
        }
    }

    /**
     * A scale so large that the model's numbers overflow is an error, not text: llama-server, asked the same,
     * reports no number (null) for the token's log-probability and writes whatever its samplers make of NaN.
     */
    public function testAnOverflowingScaleIsAnError(): void
    {
        $prompt = self::PROMPTS[0];
        $body = ['prompt' => $prompt, 'n_predict' => 1, 'temperature' => 0.0, 'n_probs' => 1, 'lora' => [['id' => 0, 'scale' => 100.0]]];
        $answer = json_decode(file_get_contents(self::server()->url . '/completion', false, stream_context_create(['http' => [
            'method' => 'POST', 'header' => "Content-Type: application/json\r\n", 'content' => json_encode($body),
        ]])), true);
        $this->assertNull($answer['completion_probabilities'][0]['logprob'], 'llama-server computed no number either');
        $overflow = 'the model computed logits that are not numbers (NaN or infinite): its computation overflowed (a LoRA adapter at too large a scale, or damaged weights), so no token can be chosen or scored';
        try {
            self::adapted()->raw($prompt, maxTokens: 1, options: ['lora' => [self::NAME => 100.0]]);
            $this->fail('an overflow is refused');
        } catch (InferenceException $e) {
            $this->assertSame($overflow, $e->getMessage());
        }
        // score() reads the same rows: no NaN comes back as a log-probability.
        try {
            self::adapted()->score(Prompt::user($prompt), [' banana'], options: ['lora' => [self::NAME => 100.0]]);
            $this->fail('an overflow is refused by score() too');
        } catch (InferenceException $e) {
            $this->assertSame($overflow, $e->getMessage());
        }
        // The model is fine for the next call.
        $this->assertSame(self::base()->raw($prompt, maxTokens: 8), self::adapted()->raw($prompt, maxTokens: 8, options: ['lora' => []]));
    }

    /** Run `support/lora-cache-steps.php` in a fresh process with $ini; its lines. */
    private static function steps(array $steps, array $ini): array
    {
        $cmd = [PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension()];
        foreach ($ini as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        array_push($cmd, __DIR__ . '/support/lora-cache-steps.php', self::modelPath(), self::loraPath(), json_encode($steps));
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        self::assertSame(0, proc_close($proc), "the steps failed: $err");
        self::assertSame('', $err);
        return array_map(fn ($line) => json_decode($line, true, flags: JSON_THROW_ON_ERROR), explode("\n", trim($out)));
    }

    /**
     * The process's prompt cache and the store its processes share keep the prefixes of each adapter set apart:
     * a call under the adapter never starts from a prefix the base model saved (nor the other way round), while
     * a call under the same set does (so the caches are on and would have served). Each reply equals a fresh
     * model's, evaluated whole.
     */
    public function testThePromptCacheAndTheStoreKeepEachSetsPrefixesApart(): void
    {
        $store = sys_get_temp_dir() . '/infer-lora-store-' . getmypid() . '-' . bin2hex(random_bytes(3));
        mkdir($store, 0700);
        $shared = ['infer.prompt_cache_dir' => $store, 'infer.prompt_cache_dir_min_tokens' => '32'];
        try {
            // The process cache: base, then the adapter on the same prompt (the cache holds the base's prefix).
            $one = self::steps([['base', 'Name a fruit.'], ['1', 'Name a fruit.'], ['1', 'Name a colour.'], ['base', 'Name a colour.']],
                ['infer.prompt_cache_mb' => '64']);
            // The store: a process of base calls fills it; the next process's call under the adapter must not
            // start from what it holds, its base call does.
            $fill = self::steps([['base', 'Name a fruit.']], $shared);
            $two = self::steps([['1', 'Name an animal.'], ['base', 'Name an animal.']], $shared);
        } finally {
            foreach (glob("$store/{,.}*", GLOB_BRACE) ?: [] as $file) {
                is_file($file) && unlink($file);
            }
            @rmdir($store);
        }
        $this->assertSame([0, 'none'], [$one[1]['cached'], $one[1]['cache']], 'the adapter does not start from the base model\'s prefix');
        $this->assertSame('memory', $one[2]['cache'], 'the adapter starts from its own');
        $this->assertSame('memory', $one[3]['cache'], 'the base model starts from its own, saved before the switches');
        $this->assertSame([0, 'none'], [$two[0]['cached'], $two[0]['cache']], 'nor from the base model\'s in the store');
        $this->assertSame('shared', $two[1]['cache'], 'the base model starts from its own in the store');
        $fresh = Model::load(self::modelPath(), ['lora' => [['path' => self::loraPath(), 'name' => self::NAME]]]);
        $calls = [[$fill[0], [], 'Name a fruit.'], [$one[0], [], 'Name a fruit.'], [$one[1], [self::NAME => 1.0], 'Name a fruit.'], [$one[2], [self::NAME => 1.0], 'Name a colour.'],
            [$one[3], [], 'Name a colour.'], [$two[0], [self::NAME => 1.0], 'Name an animal.'], [$two[1], [], 'Name an animal.']];
        foreach ($calls as $i => [$got, $set, $question]) {
            $r = $fresh->chat(self::chatPrompt($question), maxTokens: 8, options: ['lora' => $set, 'logprobs' => true, 'cache_prompt' => false]);
            $this->assertSame($r->text(), $got['text'], "call $i");
            foreach (array_column($r->logprobs(), 'logprob') as $t => $logprob) {
                $this->assertEqualsWithDelta($logprob, $got['logprobs'][$t], 2e-3, "call $i, token $t");
            }
        }
    }

    /** info() lists the adapters loaded with the model. */
    public function testInfoListsTheAdapters(): void
    {
        $this->assertSame([['name' => self::NAME, 'path' => self::loraPath(), 'scale' => 1.0]], self::adapted()->info()['lora']);
        $this->assertSame([], self::base()->info()['lora']);
        $named = Model::load(self::modelPath(), ['lora' => [['path' => self::loraPath(), 'scale' => -0.5]]]);
        $this->assertSame([['name' => 'SmolLM2-135M-test-lora', 'path' => self::loraPath(), 'scale' => -0.5]], $named->info()['lora']);
    }

    /** connect() sends the choice as llama-server's per-request `lora` (every adapter listed; those not chosen at 0). */
    public function testAConnectedServerAppliesTheChosenAdapter(): void
    {
        $remote = Model::connect(self::server()->url);
        $name = basename(self::loraPath(), '.gguf');
        $this->assertSame([['name' => $name, 'path' => self::loraPath(), 'scale' => 1.0]], $remote->info()['lora']);
        $prompt = self::PROMPTS[1];
        // Whole prompts on both sides (a reused prefix is evaluated in other batches: other last bits).
        $fresh = ['cache_prompt' => false];
        $this->assertSame(
            self::adapted()->raw($prompt, maxTokens: 20, options: ['lora' => [self::NAME => 0.5]] + $fresh),
            $remote->raw($prompt, maxTokens: 20, options: ['lora' => [$name => 0.5]] + $fresh),
        );
        // [] is none (llama-server would read an empty list as its own scales): the base model's text.
        $this->assertSame(self::base()->raw($prompt, maxTokens: 20, options: $fresh), $remote->raw($prompt, maxTokens: 20, options: ['lora' => []] + $fresh));
        // No choice: the server's own scale (1 here), as a loaded model applies its load-time scales.
        $this->assertSame(self::adapted()->raw($prompt, maxTokens: 20, options: $fresh), $remote->raw($prompt, maxTokens: 20, options: $fresh));
        try {
            $remote->raw($prompt, maxTokens: 4, options: ['lora' => ['other' => 1.0]]);
            $this->fail('an adapter the server lacks is refused');
        } catch (InferenceException $e) {
            $this->assertSame("option \"lora\" names the adapter 'other', which the server was not started with (its adapters: '$name')", $e->getMessage());
        }
    }

    /** Another model's adapter is refused by name, with what it was made for. */
    public function testAnAdapterForAnotherModelIsRefused(): void
    {
        $path = self::loraPath();
        $models = [
            'qwen2' => getenv('INFER_QWEN_MODEL') ?: dirname(__DIR__) . '/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
            'gemma3' => getenv('INFER_GEMMA_MODEL') ?: dirname(__DIR__) . '/models/gemma-3-270m-q4_k_m.gguf',
        ];
        foreach ($models as $arch => $file) {
            $this->assertFileExists($file, 'make qwen-model gemma-model');
            try {
                Model::load($file, ['lora' => [['path' => $path, 'name' => 'x']]]);
                $this->fail("the SmolLM2 adapter is refused for $arch");
            } catch (ModelLoadException $e) {
                $this->assertSame(
                    "the LoRA adapter 'x' ($path) cannot be used with this model: it was made for a 'llama' model, and this model is '$arch' (an adapter only fits the model it was trained on)",
                    $e->getMessage(),
                );
            }
        }
    }

    /** @return array<string, array{string, string}> adapter bytes => the end of the message */
    public static function hostileAdapters(): array
    {
        $adapter = ['general.architecture' => 'llama', 'general.type' => 'adapter', 'adapter.type' => 'lora', 'adapter.lora.alpha' => 0.0];
        $v = 'blk.0.attn_v.weight';
        $good = gguf_bytes($adapter, ["$v.lora_a" => [[576, 1], 0.01], "$v.lora_b" => [[1, 192], 0.01]]);
        return [
            'another shape of llama' => [
                gguf_bytes($adapter, ["$v.lora_a" => [[576, 1], 0.01], "$v.lora_b" => [[1, 100], 0.01]]),
                "llama.cpp: tensor '$v' has incorrect shape (hint: maybe wrong base model?)",
            ],
            'a tensor the model lacks' => [
                gguf_bytes($adapter, ['blk.40.attn_v.weight.lora_a' => [[576, 1], 0.01], 'blk.40.attn_v.weight.lora_b' => [[1, 192], 0.01]]),
                "llama.cpp: LoRA tensor 'blk.40.attn_v.weight' does not exist in base model (hint: maybe wrong base model?)",
            ],
            'half a pair' => [
                gguf_bytes($adapter, ["$v.lora_a" => [[576, 1], 0.01]]),
                "llama.cpp: LoRA tensor pair for '$v' is missing one component",
            ],
            'the embeddings of a tied head' => [
                gguf_bytes($adapter, ['token_embd.weight.lora_a' => [[1, 49152], 0.01], 'token_embd.weight.lora_b' => [[1, 576], 0.01]]),
                'it changes token_embd.weight, which this model also uses as its output head (it has no output.weight); llama.cpp cannot apply such an adapter to a tied head',
            ],
            'truncated' => [
                substr($good, 0, strlen($good) - 200),
                "llama.cpp: LoRA tensor '$v.lora_b' data is not within the file bounds, file is corrupted or incomplete",
            ],
            'its header cut' => [substr($good, 0, 100), 'it is not a readable GGUF file'],
            'not an adapter' => [
                gguf_bytes(['general.architecture' => 'llama', 'general.type' => 'model'], []),
                "it is not a LoRA adapter (its general.type is 'model'; a model file given as an adapter?)",
            ],
            'not GGUF' => ["PK\x03\x04 a zip file", 'it is not a GGUF file (it starts with "PK\u{3}\u{4}")'],
            'empty' => ['', 'the file is empty'],
        ];
    }

    /**
     * A damaged or mismatched adapter is refused with why, and the process goes on (the tied head would abort
     * llama.cpp in its first evaluation: llama-server --lora does).
     *
     * @dataProvider hostileAdapters
     */
    public function testHostileAdapterFilesAreRefused(string $bytes, string $why): void
    {
        $path = $this->tempFile($bytes);
        try {
            Model::load(self::modelPath(), ['lora' => [['path' => $path, 'name' => 'hostile']]]);
            $this->fail('the adapter is refused');
        } catch (ModelLoadException $e) {
            $prefix = "the LoRA adapter 'hostile' ($path) cannot be used with this model: ";
            $this->assertSame($prefix . $why, $e->getMessage());
        }
    }

    /** A well-formed adapter written here loads and changes what the model computes. */
    public function testAnAdapterWrittenHereLoads(): void
    {
        $v = 'blk.0.attn_v.weight';
        $path = $this->tempFile(gguf_bytes(
            ['general.architecture' => 'llama', 'general.type' => 'adapter', 'adapter.type' => 'lora', 'adapter.lora.alpha' => 0.0],
            ["$v.lora_a" => [[576, 1], 0.05], "$v.lora_b" => [[1, 192], 0.05]],
        ));
        $model = Model::load(self::modelPath(), ['lora' => [['path' => $path, 'name' => 'mine']]]);
        $prompt = self::chatPrompt('Name a fruit.');
        $with = self::reply($model, $prompt, ['cache_prompt' => false]);
        $without = self::reply($model, $prompt, ['lora' => [], 'cache_prompt' => false]);
        $this->assertSame(self::reply(self::base(), $prompt, ['cache_prompt' => false]), $without);
        $this->assertNotEquals($without['logprobs'], $with['logprobs']);
    }

    /** @return array<string, array{array, string}> load options => message */
    public static function badLoadOptions(): array
    {
        $lora = dirname(__DIR__) . '/models/SmolLM2-135M-test-lora.gguf';
        return [
            'not a list' => [['lora' => 'x.gguf'], 'option "lora" must be a list of adapters, each [\'path\' => string, \'scale\' => float (default 1.0), \'name\' => string (default: the file\'s name without .gguf)], got string'],
            'a map' => [['lora' => ['a' => ['path' => $lora]]], 'option "lora" must be a list of adapters, each [\'path\' => string, \'scale\' => float (default 1.0), \'name\' => string (default: the file\'s name without .gguf)], got array'],
            'entry not an array' => [['lora' => [$lora]], 'option "lora[0]" must be [\'path\' => string, \'scale\' => float (default 1.0), \'name\' => string (default: the file\'s name without .gguf)], got string'],
            'no path' => [['lora' => [['scale' => 1.0]]], 'option "lora[0]" needs a \'path\''],
            'empty path' => [['lora' => [['path' => '']]], 'option "lora[0][\'path\']" must be the path of a LoRA adapter GGUF (a non-empty string without NUL bytes), got string'],
            'unknown key' => [['lora' => [['path' => $lora, 'weight' => 1.0]]], 'option "lora[0]" has the key \'weight\'; an adapter takes \'path\', \'scale\' and \'name\''],
            'scale not a number' => [['lora' => [['path' => $lora, 'scale' => 'high']]], 'option "lora[0][\'scale\']" must be a number from -100 to 100 (0: off, 1: as trained), got string'],
            'scale too large' => [['lora' => [['path' => $lora, 'scale' => 101]]], 'option "lora[0][\'scale\']" must be a number from -100 to 100 (0: off, 1: as trained), got int 101'],
            'empty name' => [['lora' => [['path' => $lora, 'name' => '']]], 'option "lora[0][\'name\']" must be a non-empty UTF-8 string, got string'],
            'same name twice' => [['lora' => [['path' => $lora], ['path' => $lora]]], 'option "lora": every adapter needs a name of its own, and \'SmolLM2-135M-test-lora\' is empty or given twice (name them with \'name\' => …)'],
            'missing file' => [['lora' => [['path' => '/nonexistent/a.gguf']]], "the LoRA adapter 'a' (/nonexistent/a.gguf) cannot be used with this model: no such file"],
            'a directory' => [['lora' => [['path' => '/tmp']]], "the LoRA adapter 'tmp' (/tmp) cannot be used with this model: it is a directory, not a GGUF file"],
            'with shared' => [['shared' => true, 'lora' => [['path' => $lora]]], 'option "lora" applies to a model loaded in this process; a shared model is served with the server\'s settings (php.ini infer.server_*)'],
            'lora_contexts 0' => [['lora' => [['path' => $lora]], 'lora_contexts' => 0], 'option "lora_contexts" must be an int from 1 to 8 (php.ini infer.max_lora_contexts), got int 0'],
            'lora_contexts too many' => [['lora' => [['path' => $lora]], 'lora_contexts' => 9], 'option "lora_contexts" must be an int from 1 to 8 (php.ini infer.max_lora_contexts), got int 9'],
            'lora_contexts not an int' => [['lora' => [['path' => $lora]], 'lora_contexts' => '2'], 'option "lora_contexts" must be an int from 1 to 8 (php.ini infer.max_lora_contexts), got string'],
            'lora_contexts without adapters' => [['lora_contexts' => 2], 'option "lora_contexts" applies to a model loaded with LoRA adapters: add \'lora\' => [[\'path\' => …]]'],
        ];
    }

    /**
     * An administrator bounds the contexts a script may keep (each is a KV
     * cache): php.ini infer.max_lora_contexts, which ini_set() cannot raise.
     */
    public function testTheAdministratorBoundsLoraContexts(): void
    {
        $code = <<<'PHP'
            use Displace\Infer\Model;
            [, $model, $lora] = $argv;
            $out = ['ini_set' => ini_set('infer.max_lora_contexts', '64')];
            foreach ([2, 3] as $n) {
                try {
                    Model::load($model, ['lora' => [['path' => $lora]], 'lora_contexts' => $n]);
                    $out[$n] = 'loaded';
                } catch (Throwable $e) {
                    $out[$n] = get_class($e) . ': ' . $e->getMessage();
                }
            }
            echo json_encode($out);
            PHP;
        $out = json_decode($this->phpOutput(['infer.max_lora_contexts' => '2'], $code, [self::modelPath(), self::loraPath()]), true);
        $this->assertSame([
            'ini_set' => false,
            2 => 'loaded',
            3 => 'Displace\\Infer\\ModelLoadException: option "lora_contexts" must be an int from 1 to 2 (php.ini infer.max_lora_contexts), got int 3',
        ], $out);
    }

    /** @dataProvider badLoadOptions */
    public function testBadLoadOptionsAreRefusedByKey(array $options, string $message): void
    {
        try {
            Model::load(self::modelPath(), $options);
            $this->fail('refused');
        } catch (ModelLoadException $e) {
            $this->assertSame($message, $e->getMessage());
        }
    }

    /** @return array<string, array{bool, mixed, string}> adapted?, the call's lora => message */
    public static function badCallOptions(): array
    {
        return [
            'not an array' => [true, 1.0, 'option "lora" must be an array of adapter name => scale (e.g. [\'support\' => 1.0]), or [] for none, got float 1'],
            'a list' => [true, ['banana'], 'option "lora" has the integer key 0: adapters are chosen by name ([name => scale])'],
            'scale not a number' => [true, ['banana' => 'x'], 'option "lora[\'banana\']" must be a number from -100 to 100 (0: off, 1: as trained), got string'],
            'scale NaN' => [true, ['banana' => NAN], 'option "lora[\'banana\']" must be a number from -100 to 100 (0: off, 1: as trained), got float NAN'],
            'unknown name' => [true, ['apple' => 1.0], 'option "lora" names the adapter \'apple\', which the model was not loaded with (its adapters: \'banana\')'],
            'model without adapters' => [false, ['banana' => 1.0], 'option "lora" names the adapter \'banana\', but the model was loaded with none (load adapters with Model::load($path, [\'lora\' => [[\'path\' => …, \'name\' => …]]]))'],
        ];
    }

    /** @dataProvider badCallOptions */
    public function testBadCallOptionsAreRefused(bool $adapted, mixed $lora, string $message): void
    {
        $model = $adapted ? self::adapted() : self::base();
        foreach (['chat', 'chatMany', 'score'] as $method) {
            try {
                match ($method) {
                    'chat' => $model->chat(Prompt::user('Hi'), maxTokens: 2, options: ['lora' => $lora]),
                    'chatMany' => $model->chatMany([Prompt::user('Hi')], maxTokens: 2, options: ['lora' => $lora]),
                    'score' => $model->score(Prompt::user('Hi'), ['Hello'], options: ['lora' => $lora]),
                };
                $this->fail("$method refuses it");
            } catch (InferenceException $e) {
                $this->assertSame($message, $e->getMessage(), $method);
            }
        }
    }

    /** An adapter path outside open_basedir is refused as PHP's own fopen() refuses it. */
    public function testAnAdapterOutsideOpenBasedirIsRefused(): void
    {
        $basedir = dirname(self::modelPath());
        $lora = $this->tempFile((string) file_get_contents(self::loraPath()));
        $code = 'try { Displace\Infer\Model::load($argv[1], ["lora" => [["path" => $argv[2]]]]); echo "loaded"; }'
            . ' catch (Throwable $e) { echo get_class($e), ": ", $e->getMessage(); }'
            . ' echo "|", @fopen($argv[2], "rb") === false ? "fopen refused" : "fopen allowed";';
        $cmd = [PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension(), '-d', "open_basedir=$basedir",
            '-r', $code, self::modelPath(), $lora];
        $this->assertSame(
            "Displace\\Infer\\ModelLoadException: open_basedir restriction in effect. File($lora) is not within the allowed path(s): ($basedir)|fopen refused",
            shell_exec(implode(' ', array_map('escapeshellarg', $cmd))),
        );
    }
}
