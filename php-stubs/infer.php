<?php

/**
 * IDE stubs for the `infer` extension (Displace\Infer).
 *
 * This file is never loaded at run time: the classes are registered by the
 * extension (`extension=infer.so`). tests-php/StubsTest.php checks that every
 * class, method, parameter, default and return type here matches the loaded
 * extension.
 */

namespace Displace\Infer;

/**
 * Base of every error the extension raises.
 */
class InferException extends \RuntimeException
{
}

/**
 * Model::load() could not produce a model: missing, unreadable, not GGUF,
 * truncated, unsupported architecture, or an invalid load option.
 */
class ModelLoadException extends InferException
{
}

/**
 * A call on a loaded model failed: closed model, invalid argument or option,
 * prompt longer than the context, no chat template, decode failure.
 */
class InferenceException extends InferException
{
}

/**
 * A GGUF model loaded in this process (memory-mapped by default).
 */
final class Model
{
    /**
     * Models come from Model::load().
     *
     * @throws InferException always
     */
    public function __construct() {}

    /**
     * Load a GGUF model.
     *
     * @param string $path path of a .gguf file; it must be within open_basedir when that is set
     * @param array{n_gpu_layers?: int, main_gpu?: int, use_mmap?: bool, use_mlock?: bool, n_threads?: int, persistent?: bool, embedding?: bool, pooling?: 'none'|'mean'|'cls'|'last'|'rank', shared?: bool, mmproj?: string, lora?: list<array<string, string|float>>, lora_contexts?: int} $options
     *        n_gpu_layers: layers to offload to a GPU (int >= 0, default 0). Above 0 on a build without a GPU
     *        backend (the default CPU build), or where no GPU device is found, it throws ModelLoadException naming
     *        the compiled backends: never a silent run on the CPU. info() shows what was offloaded;
     *        main_gpu: the GPU (index among the GPU devices) that holds the model (int >= 0; default: the first);
     *        checked against the devices found;
     *        use_mmap: map the weights instead of reading them (default true);
     *        use_mlock: lock the weights in RAM (default false);
     *        n_threads: threads for generation (int from 1 to 512); default: the machine's cores, shared with
     *        the other processes generating at the same time (a fixed n_threads opts out of sharing);
     *        persistent: keep the model (weights, context, prompt cache) in this process after the request, so
     *        that a later load() of the same file (same device, inode, size and mtime) with the same options
     *        returns it at once (default false). At most infer.max_persistent_models (php.ini, default 2) are
     *        kept per process, the least recently used evicted.
     *        embedding: make embed() and embedMany() available (default false; generation works either way);
     *        pooling: how the token vectors of a text become one ('none', 'mean', 'cls', 'last' or 'rank';
     *        only with embedding; default: what the GGUF declares). 'rank' gives a cross-encoder's scores;
     *        'none' gives a vector per token, which embed() refuses.
     *        mmproj: the path of an image projector GGUF made for this model (llama.cpp's multimodal
     *        projector, "mmproj"): user messages may then hold Image values (docs/images.md). Not with embedding;
     *        the path obeys open_basedir. A projector that does not fit the model throws.
     *        lora: LoRA adapters loaded with the model, a list of ['path' => string, 'scale' => float (default 1.0,
     *        -100 to 100), 'name' => string (default: the file's name without .gguf)]; each call chooses among
     *        them with its option lora (['name' => scale], [] for none; default: the load-time scales). The
     *        paths obey open_basedir; an adapter that is not one, or that does not fit the model, throws
     *        naming it (docs/sampling.md, "LoRA adapters").
     *        lora_contexts: how many adapter sets keep a context (and a KV cache) of their own between calls
     *        (1 to 64, default 1: one context, switched to each call's set, which empties it and rebuilds its
     *        graph). With one per set, calls that alternate between sets switch nothing and find their
     *        prompt still cached, for the memory of one more KV cache per set. Needs lora.
     *        shared: use the llama-server that every PHP process of this installation shares (default false):
     *        php.ini infer.server_model names the one GGUF it serves, and $path must be that file; the first
     *        process that needs it starts it (infer.server_slots, infer.server_threads, infer.server_ctx,
     *        infer.server_dir, infer.server_log, infer.server_idle, infer.server_binary,
     *        infer.server_start_timeout), a dead one is started again by the next request, and it stops when no
     *        process that used it is left. The Model it returns runs as one from connect() (info()['shared'] is
     *        true); no other option may be given with it. Throws ModelLoadException when the setting is empty,
     *        names another file, an infer.server_* setting is refused (named, with its value), the state
     *        directory is not safe (docs/security.md), or the server cannot start (with the end of its log).
     *        An unknown key or a value of the wrong type or range throws.
     * @throws ModelLoadException
     */
    public static function load(string $path, array $options = []): Model {}

    /**
     * Connect to a model served by llama.cpp's llama-server, vLLM or SGLang. The Model it returns runs chat(),
     * raw(), stream(), rawStream(), embed(), embedMany(), countTokens(), contextLength(), chatTemplate() and
     * close() on the server, with the same parameters, results and exceptions as a loaded model:
     * - a schema or grammar is converted and checked here, by the same converter and checker, and the GBNF itself
     *   is sent (llama-server's `grammar`, vLLM's `structured_outputs.grammar`, SGLang's `ebnf`, the latter two
     *   as the plain BNF of llama.cpp's rules, which xgrammar reads alike): the output is as valid as locally;
     * - against llama-server the conversation is rendered here with the server's template and sent as tokens,
     *   each message's text tokenized as text: the same prompt, token for token, as a loaded model evaluates;
     * - every reply is streamed from the server, so `timeout` (generation option), max_execution_time and
     *   Stream::cancel() stop it between two tokens and close the connection.
     * Options that only a loaded model can honour (cache_prompt, max_reasoning_tokens, tools, tool_choice)
     * throw; nCtx is checked against the server's context; chatMany()/rawMany() send their prompts as concurrent
     * requests (at most `parallel` at a time), which the server batches.
     *
     * @param string $baseUrl http://host:port or https://host:port (no path beyond the server's root)
     * @param array{model?: string, api_key?: string, timeout?: float|int, retries?: int, engine?: string, verify_tls?: bool, max_response_bytes?: int} $options
     *        model: the served model's name (default: the server's only model);
     *        api_key: sent as a bearer token, never shown in messages;
     *        timeout: seconds: the most connect() takes, and each request for a JSON answer (tokens,
     *        embeddings) takes whole, and each event of a reply (keep-alive comments included) takes to arrive
     *        (default 120);
     *        retries: how many times a request is tried again when it never reached the server (connection
     *        refused) or the server turned it away as unavailable (HTTP 503), with a growing pause (0 to 10,
     *        default 2);
     *        engine: 'llama-server', 'vllm' or 'sglang' (default: asked of the server);
     *        verify_tls: check the server's certificate (default true);
     *        max_response_bytes: the most one JSON answer (an embeddings batch, a token list) may weigh, checked
     *        as it arrives (at least 65536, default 33554432: 32 MiB).
     * @throws ModelLoadException when the server cannot be reached, answers what no such engine answers, or
     *         serves no model of that name, or when allow_url_fopen is off
     */
    public static function connect(string $baseUrl, array $options = []): Model {}

    /**
     * Render $prompt with the chat template stored in the GGUF and generate a reply. The template is Jinja,
     * rendered as Hugging Face's apply_chat_template renders it (messages, add_generation_prompt, bos_token,
     * eos_token, raise_exception, strftime_now, and the caller's template_vars); a GGUF without a template is
     * rendered in llama.cpp's built-in ChatML format (see chatTemplateKind(), renderPrompt()).
     *
     * @param int $maxTokens tokens to generate at most (>= 1)
     * @param int $nCtx context size in tokens (>= 1, at most contextLength())
     * @param float $temperature 0.0 is greedy and deterministic; above 0 sampling is seeded by $seed
     * @param int $seed the same seed gives the same output
     * @param array{schema?: array|string, schema_defaults?: 'strict'|'json-schema', grammar?: string, stop?: list<string>, top_k?: int, top_p?: float, min_p?: float, repeat_penalty?: float, typical_p?: float, min_keep?: int, top_n_sigma?: float, xtc_probability?: float, xtc_threshold?: float, dynatemp_range?: float, dynatemp_exponent?: float, repeat_last_n?: int, presence_penalty?: float, frequency_penalty?: float, dry_multiplier?: float, dry_base?: float, dry_allowed_length?: int, dry_penalty_last_n?: int, dry_sequence_breakers?: list<string>, mirostat?: 0|1|2, mirostat_tau?: float, mirostat_eta?: float, logit_bias?: array<int|string, float|int|false>, ignore_eos?: bool, samplers?: list<string>|string, adaptive_target?: float, adaptive_decay?: float, logprobs?: bool, top_logprobs?: int, post_sampling_probs?: bool, lora?: array<string, float|int>, cache_prompt?: bool, fast_forward?: bool, lookup?: bool|array, timeout?: float, max_reasoning_tokens?: int, template_vars?: array<string, mixed>, special_tokens_in_messages?: bool, tools?: list<array>, tool_choice?: string|array} $options
     *        fast_forward: append what the schema or grammar forces (keys, punctuation, the rest of an enum value)
     *        without sampling it, evaluated in one batch (default true); false samples every token, as llama.cpp's
     *        tools and llama-server do.
     *        max_reasoning_tokens: the most tokens a <think> block may take; then the engine writes </think> and a
     *        blank line and the answer starts (0: the block is closed before generation). With a schema or grammar,
     *        a thought (opened by the prompt, or by the model's first words) is free text and the constraint
     *        applies to the answer after </think>.
     *        template_vars: variables for the chat template (e.g. ['enable_thinking' => false]), each passed as the
     *        JSON value of the PHP value; the names the renderer sets (messages, add_generation_prompt, bos_token,
     *        eos_token, raise_exception, strftime_now) are refused.
     *        special_tokens_in_messages: read control-token markup inside the messages (e.g. "<|im_end|>") as
     *        control tokens (default false: the text of every message is tokenized as plain text, so an end user
     *        cannot forge a turn; only the template's own markup becomes control tokens). Pass true only for
     *        content you trust.
     *        tools: the tools the model may call, a list of ['name' => …, 'description' => …, 'parameters' =>
     *        JSON Schema] (OpenAI's ['type' => 'function', 'function' => [...]] is accepted; names are 1 to 64
     *        letters, digits, '_' or '-', distinct; 'parameters' is an object schema, converted by the strict
     *        converter as 'schema' is, schema_defaults included). The model's template renders them; every call
     *        is a well-formed call of a declared tool whose arguments satisfy its parameters (see toolCalls()).
     *        tool_choice: 'auto' (default: free text, or calls once the model opens one), 'none' (text only; the
     *        format's opener token is never sampled), 'required' (calls only, from the first token), or a tool's
     *        name (calls of that tool only).
     * @throws InferenceException also when the template calls raise_exception() (its message is in the exception's)
     *         or fails
     */
    public function chat(Prompt $prompt, int $maxTokens = 128, int $nCtx = 2048, float $temperature = 0.0, int $seed = 1234, array $options = []): Response {}

    /**
     * The log-probability of the model replying exactly each of $answers to $prompt: the sum, over the answer's
     * tokens, of each token's log-probability in the model's own distribution. Nothing is generated; the prompt
     * is evaluated once (and kept, as a chat's is), each answer in one batch. Softmax the scores to compare
     * answers, e.g. a classifier's labels spelled as the schema writes them (docs/sampling.md).
     *
     * @param list<string> $answers the replies to score, each non-empty
     * @param array{lora?: array<string, float|int>, cache_prompt?: bool, timeout?: float, template_vars?: array<string, mixed>, special_tokens_in_messages?: bool} $options
     * @return list<float> in the order of $answers
     * @throws InferenceException for an empty list, an empty answer, one that does not fit in $nCtx after the
     *         prompt (naming its index), and on a connected model (servers cannot score a given reply)
     */
    public function score(Prompt $prompt, array $answers, int $nCtx = 2048, array $options = []): array {}

    /**
     * Complete $prompt as plain text: no chat template, no reasoning split.
     *
     * @param bool $addBos add the tokens the model's tokenizer puts at the start of a sequence (BOS)
     * @param array{schema?: array|string, schema_defaults?: 'strict'|'json-schema', grammar?: string, stop?: list<string>, top_k?: int, top_p?: float, min_p?: float, repeat_penalty?: float, typical_p?: float, min_keep?: int, top_n_sigma?: float, xtc_probability?: float, xtc_threshold?: float, dynatemp_range?: float, dynatemp_exponent?: float, repeat_last_n?: int, presence_penalty?: float, frequency_penalty?: float, dry_multiplier?: float, dry_base?: float, dry_allowed_length?: int, dry_penalty_last_n?: int, dry_sequence_breakers?: list<string>, mirostat?: 0|1|2, mirostat_tau?: float, mirostat_eta?: float, logit_bias?: array<int|string, float|int|false>, ignore_eos?: bool, samplers?: list<string>|string, adaptive_target?: float, adaptive_decay?: float, logprobs?: bool, top_logprobs?: int, post_sampling_probs?: bool, lora?: array<string, float|int>, cache_prompt?: bool, fast_forward?: bool, lookup?: bool|array, timeout?: float, max_reasoning_tokens?: int} $options
     * @throws InferenceException
     */
    public function raw(string $prompt, int $maxTokens = 128, int $nCtx = 2048, float $temperature = 0.0, int $seed = 1234, bool $addBos = true, array $options = []): string {}

    /**
     * Stream the reply to $prompt: the arguments of chat(), and a Stream that yields the reply piece by piece
     * as it is generated (iterate it with foreach; the key is 'reasoning' inside a <think> block, tags included,
     * else 'answer'). The pieces put together are exactly the text of $stream->response(), which is what chat()
     * returns for the same arguments. Nothing is evaluated until the iteration begins.
     *
     * While the stream is open (not iterated to the end, cancelled or destroyed), every other call on this model
     * (chat(), raw(), another stream, close(), ...) throws InferenceException.
     *
     * @param array{schema?: array|string, schema_defaults?: 'strict'|'json-schema', grammar?: string, stop?: list<string>, top_k?: int, top_p?: float, min_p?: float, repeat_penalty?: float, typical_p?: float, min_keep?: int, top_n_sigma?: float, xtc_probability?: float, xtc_threshold?: float, dynatemp_range?: float, dynatemp_exponent?: float, repeat_last_n?: int, presence_penalty?: float, frequency_penalty?: float, dry_multiplier?: float, dry_base?: float, dry_allowed_length?: int, dry_penalty_last_n?: int, dry_sequence_breakers?: list<string>, mirostat?: 0|1|2, mirostat_tau?: float, mirostat_eta?: float, logit_bias?: array<int|string, float|int|false>, ignore_eos?: bool, samplers?: list<string>|string, adaptive_target?: float, adaptive_decay?: float, logprobs?: bool, top_logprobs?: int, post_sampling_probs?: bool, lora?: array<string, float|int>, cache_prompt?: bool, fast_forward?: bool, lookup?: bool|array, timeout?: float, max_reasoning_tokens?: int, template_vars?: array<string, mixed>, special_tokens_in_messages?: bool, tools?: list<array>, tool_choice?: string|array} $options
     * @throws InferenceException when the stream cannot start (the errors of chat() that come before generation)
     */
    public function stream(Prompt $prompt, int $maxTokens = 128, int $nCtx = 2048, float $temperature = 0.0, int $seed = 1234, array $options = []): Stream {}

    /**
     * Stream the plain-text completion of $prompt: the arguments of raw(), and a Stream whose pieces are keyed
     * 'text' and put together are what raw() returns.
     *
     * @param array{schema?: array|string, schema_defaults?: 'strict'|'json-schema', grammar?: string, stop?: list<string>, top_k?: int, top_p?: float, min_p?: float, repeat_penalty?: float, typical_p?: float, min_keep?: int, top_n_sigma?: float, xtc_probability?: float, xtc_threshold?: float, dynatemp_range?: float, dynatemp_exponent?: float, repeat_last_n?: int, presence_penalty?: float, frequency_penalty?: float, dry_multiplier?: float, dry_base?: float, dry_allowed_length?: int, dry_penalty_last_n?: int, dry_sequence_breakers?: list<string>, mirostat?: 0|1|2, mirostat_tau?: float, mirostat_eta?: float, logit_bias?: array<int|string, float|int|false>, ignore_eos?: bool, samplers?: list<string>|string, adaptive_target?: float, adaptive_decay?: float, logprobs?: bool, top_logprobs?: int, post_sampling_probs?: bool, lora?: array<string, float|int>, cache_prompt?: bool, fast_forward?: bool, lookup?: bool|array, timeout?: float, max_reasoning_tokens?: int} $options
     * @throws InferenceException
     */
    public function rawStream(string $prompt, int $maxTokens = 128, int $nCtx = 2048, float $temperature = 0.0, int $seed = 1234, bool $addBos = true, array $options = []): Stream {}

    /**
     * Generate replies to many prompts together: each prompt is a parallel sequence of one llama.cpp context, and
     * every step decodes the next token of all of them in one batch. Each result is what chat() returns for that
     * prompt alone (at temperature 0 identical, text, finish reason and counts included); the options (schema,
     * grammar, stop, ...) apply to every prompt, each with its own sampler, grammar state and stop strings. Above
     * temperature 0 every prompt is sampled with $seed, as chat() would sample it with that seed.
     *
     * @param list<Prompt> $prompts a list (keys 0, 1, 2, ... in order; pass array_values() of another array)
     * @param int $nCtx the context of each prompt, as in chat(); the shared context is sized from it
     * @param array{schema?: array|string, schema_defaults?: 'strict'|'json-schema', grammar?: string, stop?: list<string>, top_k?: int, top_p?: float, min_p?: float, repeat_penalty?: float, typical_p?: float, min_keep?: int, top_n_sigma?: float, xtc_probability?: float, xtc_threshold?: float, dynatemp_range?: float, dynatemp_exponent?: float, repeat_last_n?: int, presence_penalty?: float, frequency_penalty?: float, dry_multiplier?: float, dry_base?: float, dry_allowed_length?: int, dry_penalty_last_n?: int, dry_sequence_breakers?: list<string>, mirostat?: 0|1|2, mirostat_tau?: float, mirostat_eta?: float, logit_bias?: array<int|string, float|int|false>, ignore_eos?: bool, samplers?: list<string>|string, adaptive_target?: float, adaptive_decay?: float, logprobs?: bool, top_logprobs?: int, post_sampling_probs?: bool, lora?: array<string, float|int>, cache_prompt?: bool, fast_forward?: bool, lookup?: bool|array, timeout?: float, max_reasoning_tokens?: int, template_vars?: array<string, mixed>, special_tokens_in_messages?: bool, tools?: list<array>, tool_choice?: string|array, parallel?: int} $options
     *        the options of chat(), plus parallel: how many prompts are decoded at a time (int from 1 to 256,
     *        default 32); when there are more prompts, a sequence that finishes takes the next prompt at once.
     *        cache_prompt: each prompt starts from a prefix the process keeps, saved by a context of as many
     *        sequences; fast_forward: each sequence forwards on its own, with chat()'s results.
     * @return list<Response> in the order of $prompts
     * @throws InferenceException for an empty list, an element that is not a Prompt, a prompt that does not fit
     *         in $nCtx (naming its index), and every error of chat()
     */
    public function chatMany(array $prompts, int $maxTokens = 128, int $nCtx = 2048, float $temperature = 0.0, int $seed = 1234, array $options = []): array {}

    /**
     * Complete many plain-text prompts together, as chatMany() does for chat transcripts: each result is what
     * raw() returns for that prompt alone.
     *
     * @param list<string> $prompts a list of strings (keys 0, 1, 2, ... in order)
     * @param array{schema?: array|string, schema_defaults?: 'strict'|'json-schema', grammar?: string, stop?: list<string>, top_k?: int, top_p?: float, min_p?: float, repeat_penalty?: float, typical_p?: float, min_keep?: int, top_n_sigma?: float, xtc_probability?: float, xtc_threshold?: float, dynatemp_range?: float, dynatemp_exponent?: float, repeat_last_n?: int, presence_penalty?: float, frequency_penalty?: float, dry_multiplier?: float, dry_base?: float, dry_allowed_length?: int, dry_penalty_last_n?: int, dry_sequence_breakers?: list<string>, mirostat?: 0|1|2, mirostat_tau?: float, mirostat_eta?: float, logit_bias?: array<int|string, float|int|false>, ignore_eos?: bool, samplers?: list<string>|string, adaptive_target?: float, adaptive_decay?: float, logprobs?: bool, top_logprobs?: int, post_sampling_probs?: bool, lora?: array<string, float|int>, cache_prompt?: bool, fast_forward?: bool, lookup?: bool|array, timeout?: float, max_reasoning_tokens?: int, parallel?: int} $options
     *        as for chatMany()
     * @return list<string> in the order of $prompts
     * @throws InferenceException
     */
    public function rawMany(array $prompts, int $maxTokens = 128, int $nCtx = 2048, float $temperature = 0.0, int $seed = 1234, bool $addBos = true, array $options = []): array {}

    /**
     * The embedding of $text. The model must be loaded with 'embedding' => true; the text gets the special tokens
     * the model's tokenizer adds to a sequence (BERT's [CLS] and [SEP]) and must fit in contextLength() tokens:
     * a longer text throws, naming both lengths (it is never cut silently).
     *
     * @throws InferenceException for a model not loaded for embeddings, pooling 'none', an empty text, a text that is
     *         not UTF-8 or holds a NUL byte, a text longer than the context
     */
    public function embed(string $text): Embedding {}

    /**
     * The embeddings of $texts, in order: the texts are packed into as few llama.cpp batches as the context allows
     * (several texts per evaluation), which gives embed()'s vectors (to float tolerance) in less time.
     *
     * @param list<string> $texts a list (keys 0, 1, 2, ... in order); an empty list gives an empty list
     * @return list<Embedding>
     * @throws InferenceException as embed(), naming the text's index (texts[3]: ...)
     */
    public function embedMany(array $texts): array {}

    /**
     * Free the weights. Idempotent; any later call on the model throws InferenceException.
     * Throws InferenceException while a stream is open on the model.
     * A persistent model is also dropped from the process's table; another object of the same request
     * that loaded the same model keeps working, and the memory goes when the last of them goes.
     */
    public function close(): void {}

    /** Whether the model was loaded with 'persistent' => true (and not closed since). */
    public function isPersistent(): bool {}

    /**
     * How many tokens $text encodes to, without BOS.
     *
     * @param bool $parseSpecial read control-token markup such as "<|im_end|>" as one control token each (the
     *        default, as raw() reads its prompt); false counts it as text, the way chat() reads the text of messages
     * @throws InferenceException when the model is closed
     */
    public function countTokens(string $text, bool $parseSpecial = true): int {}

    /**
     * The context length the model was trained for.
     *
     * @throws InferenceException when the model is closed
     */
    public function contextLength(): int {}

    /**
     * What the model runs on and what it is — enough to see that a GPU is really used:
     *
     *     ['backend' => 'cpu'|'cuda'|'vulkan'|'metal' (where the layers run), 'backends' => the compiled ones,
     *      'devices' => [['name', 'description', 'backend', 'type' => 'cpu'|'gpu'|'igpu'|'accel', 'memory_total',
     *      'memory_free'], …], 'gpu_layers' => layers offloaded, 'layers' => the total (repeating layers + output),
     *      'context_length' => trained context, 'context_size' => the last call's context or null, 'threads',
     *      'file_size' => bytes, 'parameters', 'quantization' => 'Q4_1', 'Q4_K_M', …, 'vision' => whether an image
     *      projector is loaded, 'mmproj' => its path or null, 'lora' => the adapters loaded with it, a list of
     *      ['name', 'path', 'scale' => the load-time scale]]
     *
     * For a connected model: ['backend' => 'remote', 'engine', 'url', 'model', 'context_length', 'vision' => whether
     * llama-server has an image projector (null for vLLM and SGLang, which do not say), 'lora' => the adapters a
     * llama-server was started with, named after their files ([] for vLLM and SGLang)].
     *
     * @throws InferenceException when the model has been closed
     */
    public function info(): array {}

    /**
     * The chat template stored in the GGUF, or null when it has none.
     *
     * @throws InferenceException when the model is closed
     */
    public function chatTemplate(): ?string {}

    /**
     * How chat() renders prompts: 'jinja' (the GGUF's own template, rendered as Hugging Face renders it) or
     * 'chatml' (llama.cpp's built-in ChatML format, used only for a GGUF that stores no template).
     *
     * @return 'jinja'|'chatml'
     * @throws InferenceException when the model is closed
     */
    public function chatTemplateKind(): string {}

    /**
     * The exact text chat() gives the model for $prompt: the rendered template, ending with the opening of the
     * assistant's turn. Nothing is generated.
     *
     * @param array $options the options of chat() (template_vars is the one that changes the text; the others are
     *        checked as chat() checks them)
     * @throws InferenceException as chat() does before generating (a template that raises or fails, a closed model)
     */
    public function renderPrompt(Prompt $prompt, array $options = []): string {}
}

/**
 * An immutable chat transcript. Every with*() returns a new Prompt.
 */
final class Prompt
{
    /**
     * Prompts come from Prompt::system() or Prompt::user().
     *
     * @throws InferException always
     */
    public function __construct() {}

    /** A transcript that starts with a system message. */
    public static function system(string $content): Prompt {}

    /**
     * A transcript that starts with a user message: a string, or a list of strings and Image objects in the order
     * the model reads them (Prompt::user(['What is on this receipt?', Image::fromFile($path)])). Images need a
     * model loaded with an image projector ('mmproj').
     *
     * @param string|list<string|Image> $content
     * @throws \TypeError for content that is neither, or a list with keys out of order
     * @throws InferException for text that is not UTF-8
     */
    public static function user(mixed $content): Prompt {}

    /** This transcript plus a system message. */
    public function withSystem(string $content): Prompt {}

    /**
     * This transcript plus a user message: a string, or a list of strings and Image objects (see user()).
     *
     * @param string|list<string|Image> $content
     * @throws \TypeError for content that is neither, or a list with keys out of order
     * @throws InferException for text that is not UTF-8
     */
    public function withUser(mixed $content): Prompt {}

    /** This transcript plus an assistant message. */
    public function withAssistant(string $content): Prompt {}

    /**
     * This transcript plus an assistant turn that calls tools, rendered by the model's template in its own call
     * format (e.g. Qwen's <tool_call> blocks).
     *
     * @param list<ToolCall|array{id?: string, name: string, arguments?: array|string}> $calls ToolCall objects
     *        (from Response::toolCalls()) or arrays; 'arguments' is a PHP array or JSON object text (default {}),
     *        'id' is made when left out
     * @throws InferException for an empty list, an element that is neither, or arguments that are not a JSON object
     */
    public function withToolCalls(array $calls): Prompt {}

    /**
     * This transcript plus the result of a tool call (a 'tool' message). Its content is text: control-token markup
     * in it is never read as control tokens (unless special_tokens_in_messages).
     *
     * @param string $callId the id of a call of this transcript (ToolCall::id())
     * @param string|null $name the tool's name, for templates that show it
     * @throws InferException when $callId is not the id of a call in this transcript
     */
    public function withToolResult(string $callId, string $content, ?string $name = null): Prompt {}

    /**
     * The messages, oldest first.
     *
     * @return list<Message>
     */
    public function messages(): array {}

    /**
     * The role of the last message.
     *
     * @return 'system'|'user'|'assistant'|'tool'|null
     */
    public function lastRole(): ?string {}

    /** How many messages the transcript holds. */
    public function count(): int {}

    /** Whether the transcript holds no message. */
    public function isEmpty(): bool {}
}

/**
 * An image for a user message: decoded once to RGB pixels (PNG, JPEG, GIF — its first frame —, WebP or BMP;
 * transparency dropped). The size its header declares is checked against php.ini infer.max_image_pixels (default
 * 16777216) and infer.max_image_side (default 16384) before anything is decoded. Its pixels live outside PHP's heap
 * and count against memory_limit while the image lives. Immutable; cannot be serialized.
 */
final class Image
{
    /**
     * Images come from Image::fromFile(), Image::fromBytes() or Image::fromPixels().
     *
     * @throws InferException always
     */
    public function __construct() {}

    /**
     * The image in the file at $path (a regular file of at most 256 MiB; the path obeys open_basedir).
     *
     * @throws InferException for a path outside open_basedir, a file that cannot be read or is not a regular file
     *         (a directory, a FIFO, a device), bytes that are not an image, a damaged image, one larger than
     *         infer.max_image_pixels or with a side longer than infer.max_image_side, or a file or pixels that
     *         memory_limit has no room left for
     */
    public static function fromFile(string $path): Image {}

    /**
     * The image whose file's bytes are $bytes (file_get_contents(), an upload, imagepng()'s output, …).
     *
     * @throws InferException for bytes that are not an image, a damaged image, one larger than
     *         infer.max_image_pixels or with a side longer than infer.max_image_side, or pixels that memory_limit has
     *         no room left for
     */
    public static function fromBytes(string $bytes): Image {}

    /**
     * An image from raw pixels: $width × $height RGB triples, row by row (3 bytes a pixel).
     *
     * @throws InferException for a size that is not positive, larger than infer.max_image_pixels, a side longer
     *         than infer.max_image_side, bytes that are not exactly $width * $height * 3, or pixels that memory_limit
     *         has no room left for
     */
    public static function fromPixels(int $width, int $height, string $rgb): Image {}

    public function width(): int {}

    public function height(): int {}

    /** @return 'PNG'|'JPEG'|'GIF'|'WebP'|'BMP'|'pixels' what it was decoded from */
    public function format(): string {}

    /**
     * SHA-256 (hex) of the width and height (32-bit little-endian) and the RGB pixels: the image's identity in the
     * prompt cache (the same pixels in another file format are the same image).
     */
    public function sha256(): string {}

    /**
     * The pixels as a PNG file.
     *
     * @throws InferException if encoding fails
     */
    public function toPng(): string {}
}

/**
 * One turn of a transcript.
 */
final class Message
{
    /**
     * Messages come from Prompt::messages().
     *
     * @throws InferException always
     */
    public function __construct() {}

    /** @return 'system'|'user'|'assistant'|'tool' */
    public function role(): string {}

    /** The text of the message, verbatim (its images left out). */
    public function content(): string {}

    /**
     * The message as it was given: its text and images in order.
     *
     * @return list<string|Image>
     */
    public function parts(): array {}

    /**
     * The message's images, in order.
     *
     * @return list<Image>
     */
    public function images(): array {}

    /**
     * The calls an assistant turn makes (Prompt::withToolCalls()).
     *
     * @return list<ToolCall>
     */
    public function toolCalls(): array {}

    /** For a tool's result (Prompt::withToolResult()): the id of the call it answers; otherwise null. */
    public function toolCallId(): ?string {}
}

/**
 * One call of a tool, from Response::toolCalls() (or a transcript's assistant turn).
 */
final class ToolCall
{
    /**
     * Tool calls come from Response::toolCalls().
     *
     * @throws InferException always
     */
    public function __construct() {}

    /** The call's id ('call_' and 24 hexadecimal digits), which Prompt::withToolResult() refers to. */
    public function id(): string {}

    /** The name of the tool called: always one of the call's tools. */
    public function name(): string {}

    /**
     * The arguments, decoded (objects as PHP arrays). For a run that finished 'tool_calls' they satisfy the tool's
     * 'parameters' schema (the strict converter's guarantee, as for 'schema').
     *
     * @return array<string, mixed>
     * @throws InferenceException when a value cannot be given to PHP
     */
    public function arguments(): mixed {}

    /** The arguments as the model wrote them (a JSON object). */
    public function argumentsJson(): string {}
}

/**
 * The JSON Schema converter and the GBNF checker.
 */
final class Grammar
{
    /**
     * Grammar has only static methods.
     *
     * @throws InferException always
     */
    public function __construct() {}

    /**
     * The GBNF grammar the converter builds for a JSON Schema. Its start rule is `root`.
     *
     * @param array|string|object $schema the schema as a PHP array (or object from json_decode()), or as JSON text
     * @param array{schema_defaults?: 'strict'|'json-schema'} $options `schema_defaults`: how an object schema that
     *        leaves `required` or `additionalProperties` out is read. `'strict'` (default): every declared property
     *        is written and no other key; `'json-schema'`: as a validator reads it, every property may be left out
     *        and other keys may appear
     * @throws InferException naming the keyword and the JSON pointer when the schema cannot be enforced exactly,
     *         or naming the option when an option is unknown or has a wrong value
     */
    public static function fromSchema(mixed $schema, array $options = []): string {}

    /**
     * Check a GBNF grammar without loading a model.
     *
     * @throws InferException with the line and column when the grammar does not parse, has no `root` rule,
     *         refers to an undefined rule, is left-recursive or can match nothing
     */
    public static function check(string $gbnf): void {}
}

/**
 * The result of Model::chat().
 */
final class Response
{
    /**
     * Responses come from Model::chat().
     *
     * @throws InferException always
     */
    public function __construct() {}

    /** Everything generated, reasoning included. */
    public function text(): string {}

    /** The text without <think> blocks (nor tool calls), leading whitespace trimmed. */
    public function answer(): string {}

    /**
     * The tools the reply calls, in order (complete calls only). A run that ends after calling tools finishes
     * 'tool_calls'.
     *
     * @return list<ToolCall>
     */
    public function toolCalls(): array {}

    /**
     * The contents of the <think> blocks (trimmed, joined by a blank line), or
     * null when there were none. A run cut off inside <think> puts the partial
     * thought here and leaves answer() empty.
     */
    public function reasoning(): ?string {}

    /** Whether reasoning() is a non-empty string. */
    public function hasReasoning(): bool {}

    /**
     * 'timeout': the deadline of option 'timeout' (seconds) came, during generation or during the prompt's
     * evaluation, and the response holds what was generated before it; or PHP's time limit (max_execution_time)
     * ran out during the call, which then ends with PHP's fatal error. Either way the model stays consistent.
     *
     * 'cancelled': only for a response of a Stream that was cancelled.
     *
     * 'tool_calls': the reply called tools (option 'tools') and ended there; see toolCalls().
     *
     * @return 'eos'|'length'|'stop'|'timeout'|'cancelled'|'tool_calls'
     */
    public function finishReason(): string {}

    /** Tokens generated, the end-of-generation token excluded. */
    public function tokensGenerated(): int {}

    /** Tokens of the rendered prompt. */
    public function promptTokens(): int {}

    /**
     * Prompt tokens taken from a cache instead of evaluated: the prefix this prompt shares with the model's
     * previous call or with a prefix this process keeps (php.ini infer.prompt_cache_mb; 0 with
     * 'cache_prompt' => false, or on a fresh model).
     */
    public function cachedTokens(): int {}

    /**
     * Where the time went. For a connected model the times are measured by this process (up to the first
     * text, and the rest) and 'cache' is 'memory' when the server reused prompt tokens.
     *
     * @return array{prompt_ms: float, generation_ms: float, prompt_tokens_per_second: float,
     *     tokens_per_second: float, cached_tokens: int, cache: 'none'|'memory'|'shared'}
     */
    public function timings(): array {}

    /**
     * Each generated token's log-probability and the most likely tokens at its place, when the call asked for
     * them ('logprobs' => true, 'top_logprobs' => 0 to 20); null when it did not. OpenAI's shape, with
     * llama-server's 'id' (null from vLLM and SGLang, whose API names tokens by text) and whether the token
     * was forced by the constraint (probability 1 under the mask, logprob 0.0). By default the probabilities are the model's own (a softmax of its logits, before the bias,
     * the penalties, the temperature and the constraint's mask, as llama-server's n_probs); with
     * 'post_sampling_probs' => true, those of the candidates the samplers left (a greedy pick: 1).
     *
     * @return list<array{id: int|null, token: string, bytes: list<int>, logprob: float, forced: bool, top_logprobs: list<array{id: int|null, token: string, bytes: list<int>, logprob: float}>}>|null
     */
    public function logprobs(): ?array {}

    /**
     * The answer decoded as JSON, objects as PHP arrays (like json_decode($answer, true)).
     *
     * @throws InferenceException when the answer is not valid JSON
     */
    public function json(): mixed {}

    /**
     * An instance of $class built from the answer (a JSON object): nested objects, lists of objects, enums by value
     * (unit enums by case name), DateTimeInterface properties from their strings. The constructor runs, with named
     * arguments, when every required parameter has a value in the answer; otherwise the object is created without
     * it and each property is set through reflection (readonly ones included; a promoted parameter left out gets its
     * default). Every value is checked against the property's type, and the whole answer against the constraints
     * of Schema::fromClass($class). Under that schema, a run that finished 'eos' always fits.
     *
     * @template T of object
     * @param class-string<T> $class
     * @return T
     * @throws InferenceException saying where the answer does not fit (a JSON pointer), that the run was cut short
     *         (finish reason other than 'eos'), or that the constructor threw
     */
    public function into(string $class): mixed {}
}

/**
 * A JSON Schema built step by step, accepted wherever a schema is (`options: ['schema' => $schema]`,
 * Grammar::fromSchema(), tool parameters). Immutable: each method returns a new Schema. Each step is checked when
 * it is taken — the keyword fits the type, bounds are in order, the converter accepts it — and a mistake throws
 * InferException naming the property.
 *
 *     $person = Schema::object([
 *         Schema::string('name')->required()->maxLength(40),
 *         Schema::integer('age')->minimum(0),
 *         'tags' => Schema::array(Schema::string())->maxItems(3),
 *     ]);
 *
 * Objects require only the properties marked required() and allow no other key.
 */
final class Schema implements \JsonSerializable
{
    /** @throws InferException always: use the static methods */
    public function __construct() {}

    /**
     * @param array<int|string, Schema> $properties named by their string keys, or by their own names
     * @throws InferException when a property has no name, two share one, or a key and a name differ
     * @throws \TypeError when an entry is not a Schema
     */
    public static function object(array $properties, ?string $name = null): Schema {}

    public static function string(?string $name = null): Schema {}

    public static function integer(?string $name = null): Schema {}

    public static function number(?string $name = null): Schema {}

    public static function boolean(?string $name = null): Schema {}

    public static function null(?string $name = null): Schema {}

    /** A list whose items all match $items. */
    public static function array(Schema $items, ?string $name = null): Schema {}

    /**
     * One of $values (any JSON values, each once; a backed enum case stands for its value, a unit case for its name).
     *
     * @param list<mixed> $values
     */
    public static function enum(array $values, ?string $name = null): Schema {}

    /** @param list<Schema> $schemas a value matching any of them */
    public static function anyOf(array $schemas, ?string $name = null): Schema {}

    /**
     * The schema of a class, from its public non-static typed properties (promoted constructor parameters
     * included): string, int, float, bool, true/false, nullable types, unions of scalars, backed enums (their
     * values) and unit enums (case names), DateTimeInterface classes (a `date-time` string unless a Constraint gives
     * another format), other classes (nested objects; a class that contains itself through `$defs`), and `array`
     * with its item type from #[ListOf(Foo::class)], `@var list<Foo>` / `array<int, Foo>` / `Foo[]` on the
     * property, or `@param list<Foo> $name` on the constructor (names resolved in the class's namespace, or fully
     * qualified: `use` imports are not visible to reflection). A property with a default value (or a promoted
     * parameter with one) is optional, the others required. #[Description] and #[Constraint] describe and constrain
     * the class and its properties.
     *
     * @param class-string $class
     * @throws InferException naming the class and property of a type a schema cannot express (no type, mixed,
     *         object, callable, iterable, an intersection, a union of classes, an enum or date in a union, an array
     *         without an item type, an interface or abstract class), or of a constraint that does not fit it
     */
    public static function fromClass(string $class): Schema {}

    /** Required in the enclosing object (or not). */
    public function required(bool $required = true): Schema {}

    /** Null allowed besides this schema's values (or not). */
    public function nullable(bool $nullable = true): Schema {}

    public function description(string $text): Schema {}

    /** @throws InferException on a schema other than string, or a negative count */
    public function minLength(int $n): Schema {}

    /** @throws InferException on a schema other than string, or a negative count */
    public function maxLength(int $n): Schema {}

    /**
     * An ECMAScript regex the string must contain a match of (anchor it with ^…$ to match the whole string).
     *
     * @throws InferException on a schema other than string, or a regex the converter refuses
     */
    public function pattern(string $regex): Schema {}

    /**
     * `date`, `date-time`, `time`, `email`, `uuid`, `uri`, … (docs/structured-output.md lists them).
     *
     * @throws InferException on a schema other than string, or an unsupported format
     */
    public function format(string $format): Schema {}

    /**
     * @param int|float $n
     * @throws InferException on a schema other than integer or number
     * @throws \TypeError when $n is not a finite int or float
     */
    public function minimum(mixed $n): Schema {}

    /** @param int|float $n */
    public function maximum(mixed $n): Schema {}

    /** @param int|float $n */
    public function exclusiveMinimum(mixed $n): Schema {}

    /** @param int|float $n */
    public function exclusiveMaximum(mixed $n): Schema {}

    /** @param int|float $n greater than 0 */
    public function multipleOf(mixed $n): Schema {}

    /** @throws InferException on a schema other than array */
    public function minItems(int $n): Schema {}

    /** @throws InferException on a schema other than array */
    public function maxItems(int $n): Schema {}

    /** @throws InferException on a schema other than array, or items the grammar cannot tell apart */
    public function uniqueItems(bool $unique = true): Schema {}

    /** The property name, if any. */
    public function name(): ?string {}

    public function isRequired(): bool {}

    /** @return array<string, mixed> the JSON Schema */
    public function toArray(): mixed {}

    public function toJson(): string {}

    /** @return array<string, mixed> the JSON Schema, for json_encode() */
    public function jsonSerialize(): mixed {}
}

/**
 * The description of a class or property in Schema::fromClass(): `#[Description('The customer's legal name')]`.
 */
#[\Attribute(\Attribute::TARGET_CLASS | \Attribute::TARGET_PROPERTY | \Attribute::TARGET_PARAMETER)]
final class Description
{
    public string $text;

    public function __construct(string $text) {}
}

/**
 * JSON Schema constraints on a property in Schema::fromClass(), checked as Schema's methods check them:
 * `#[Constraint(minimum: 0, maximum: 100)]`, `#[Constraint(pattern: '^INV-[0-9]+$', maxLength: 20)]`,
 * `#[Constraint(format: 'date')]`, `#[Constraint(minItems: 1)]`.
 */
#[\Attribute(\Attribute::TARGET_PROPERTY | \Attribute::TARGET_PARAMETER)]
final class Constraint
{
    /**
     * @param int|float|null $minimum
     * @param int|float|null $maximum
     * @param int|float|null $exclusiveMinimum
     * @param int|float|null $exclusiveMaximum
     * @param int|float|null $multipleOf
     * @throws \TypeError when a numeric bound is not a finite int or float
     */
    public function __construct(
        ?int $minLength = null,
        ?int $maxLength = null,
        ?string $pattern = null,
        ?string $format = null,
        mixed $minimum = null,
        mixed $maximum = null,
        mixed $exclusiveMinimum = null,
        mixed $exclusiveMaximum = null,
        mixed $multipleOf = null,
        ?int $minItems = null,
        ?int $maxItems = null,
        ?bool $uniqueItems = null,
    ) {}

    /** @return array<string, mixed> the keywords given */
    public function toArray(): mixed {}
}

/**
 * The item type of an `array` property in Schema::fromClass(): `#[ListOf(LineItem::class)]`, or `'string'`,
 * `'int'`, `'float'`, `'bool'`.
 */
#[\Attribute(\Attribute::TARGET_PROPERTY | \Attribute::TARGET_PARAMETER)]
final class ListOf
{
    public string $type;

    public function __construct(string $type) {}
}

/**
 * A reply being generated, read piece by piece:
 *
 *     foreach ($model->stream($prompt) as $part => $piece) { echo $piece; flush(); }
 *
 * Each value is the next piece of text; the key is 'reasoning' (a <think> block, tags included) or 'answer' for
 * stream(), 'text' for rawStream(). A piece is handed out only when it is final: a character split across tokens
 * waits for its last byte, and text that could still turn into a stop string (or a <think> tag) waits until it
 * cannot, so the pieces put together equal text() byte for byte.
 *
 * Tokens are generated only as pieces are asked for. Breaking out of the loop stops generating; letting the
 * stream go (unset, end of scope, end of request) or cancel() frees the model too, whose cache then holds the
 * prompt and the tokens evaluated so far. A stream is iterated once: a second foreach throws.
 */
final class Stream implements \Iterator
{
    /**
     * Streams come from Model::stream() and Model::rawStream().
     *
     * @throws InferException always
     */
    public function __construct() {}

    /**
     * Begin the iteration: the prompt is evaluated and the first piece generated.
     *
     * @throws InferenceException when the stream was iterated before, or generation fails
     */
    public function rewind(): void {}

    /** Whether there is a piece at the current position. */
    public function valid(): bool {}

    /** The current piece of text; null before the iteration and after its end. */
    public function current(): ?string {}

    /**
     * Which part the current piece belongs to; null before the iteration and after its end.
     *
     * @return 'reasoning'|'answer'|'text'|null
     */
    public function key(): ?string {}

    /**
     * The log-probabilities of the tokens whose text ends in the current piece (see Response::logprobs()), when
     * the call asked for them; null otherwise, and past the end.
     *
     * @return list<array{id: int|null, token: string, bytes: list<int>, logprob: float, forced: bool, top_logprobs: list<array{id: int|null, token: string, bytes: list<int>, logprob: float}>}>|null
     */
    public function logprobs(): ?array {}

    /**
     * Generate the next piece.
     *
     * @throws InferenceException when generation fails
     */
    public function next(): void {}

    /**
     * Stop generating now and free the model, keeping what was generated: finish reason 'cancelled' (unless the
     * generation had ended already). Pieces generated but not yet handed out still come. Idempotent.
     */
    public function cancel(): void {}

    /**
     * The whole result: generates to the end first when called before the end of the iteration (the pieces not
     * yet handed out still come). For rawStream() the answer is the whole text, with no reasoning split.
     *
     * @throws InferenceException when generation fails
     */
    public function response(): Response {}

    /**
     * The whole text (see response()).
     *
     * @throws InferenceException
     */
    public function text(): string {}

    /**
     * Why the generation ended (see response()): 'eos', 'length', 'stop', 'timeout', 'cancelled' or 'tool_calls'.
     *
     * @return 'eos'|'length'|'stop'|'timeout'|'cancelled'|'tool_calls'
     * @throws InferenceException
     */
    public function finishReason(): string {}
}

/**
 * The embedding of a text: float32 values as llama.cpp computes them (not normalised; see normalize()).
 */
final class Embedding
{
    /**
     * Embeddings come from Model::embed() and Model::embedMany() (or fromVector() / fromPacked()).
     *
     * @throws InferException always
     */
    public function __construct() {}

    /**
     * An embedding from stored values, to compare with new ones.
     *
     * @param list<int|float> $values a list of finite numbers, kept as float32
     * @throws InferenceException for a value that is not a finite number that fits a float32, or an array that is not a list
     */
    public static function fromVector(array $values): Embedding {}

    /**
     * An embedding from the bytes packed() returned (little-endian float32).
     *
     * @throws InferenceException when the length is not a multiple of 4 or a value is not finite
     */
    public static function fromPacked(string $bytes): Embedding {}

    /**
     * The values (float32 widened to PHP floats, exactly).
     *
     * @return list<float>
     */
    public function vector(): array {}

    /** How many values. */
    public function dimensions(): int {}

    /** The values as little-endian float32 bytes, byte for byte pack('g*', ...$this->vector()). */
    public function packed(): string {}

    /** The Euclidean length. */
    public function norm(): float {}

    /** This embedding scaled to length 1; a zero vector is returned unchanged. */
    public function normalize(): Embedding {}

    /**
     * The cosine of the angle between the two vectors, from -1 to 1; 0 when either is a zero vector.
     *
     * @throws InferenceException when the dimensions differ
     */
    public function cosineSimilarity(Embedding $other): float {}
}

/**
 * A model that scores how relevant documents are to a query, in (0, 1), one of two ways:
 * - a cross-encoder (a GGUF that declares rank pooling, as llama.cpp's conversion of bge-reranker does) reads the
 *   query and the document together ([BOS] query [EOS] [SEP] document [EOS], each where the vocabulary adds it);
 *   the score is the sigmoid of its classification head's output;
 * - any other instruct model (with a chat template) is asked, in Qwen3-Reranker's words, whether the document meets
 *   the query; the score is P(yes) / (P(yes) + P(no)) from its next-token logits, "yes" counting the tokens "yes"
 *   and "Yes", "no" the tokens "no" and "No" (the capitalised forms where they are single tokens).
 */
final class RerankModel
{
    /**
     * Rerank models come from RerankModel::load().
     *
     * @throws InferException always
     */
    public function __construct() {}

    /**
     * Load a GGUF reranker.
     *
     * @param array{n_gpu_layers?: int, main_gpu?: int, use_mmap?: bool, use_mlock?: bool, n_threads?: int, n_ctx?: int, instruction?: string} $options
     *        n_gpu_layers, main_gpu, use_mmap, use_mlock, n_threads: as for Model::load();
     *        n_ctx: the tokens a query and a document may take together (int >= 1, default 4096, at most the model's
     *        trained context); instruction: what relevance means, for an instruct model (default: "Given a web search
     *        query, retrieve relevant passages that answer the query"; a cross-encoder has none).
     * @throws ModelLoadException also for a model that is not a cross-encoder and has no chat template, or whose
     *         vocabulary has no single token for "yes" or "no"
     */
    public static function load(string $path, array $options = []): RerankModel {}

    /**
     * How relevant $document is to $query, in (0, 1).
     *
     * @throws InferenceException when the pair does not fit in n_ctx, a string is not UTF-8 or holds a NUL byte
     */
    public function score(string $query, string $document): float {}

    /**
     * $documents best first, ties in input order. The documents are scored together: for an instruct model, what
     * comes before the document (system prompt, instruction, query) is evaluated once and several documents per
     * batch after it.
     *
     * @param list<string> $documents
     * @param int|null $topK keep the first $topK (>= 1); null keeps all
     * @return list<array{index: int, score: float}> index: the document's position in $documents
     * @throws InferenceException as score(), naming the document's index; for $topK < 1
     */
    public function rank(string $query, array $documents, ?int $topK = null): array {}

    /** Free the weights. Idempotent; later calls throw InferenceException. */
    public function close(): void {}
}
