<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

/**
 * Every expected value in the PHP tests that holds for the default model only:
 * SmolLM2-135M-Instruct, Q4_1, the file scripts/fetch-model.sh fetches and
 * checks. These are what that model generates greedily, how its tokenizer
 * splits text, and what its GGUF metadata says; another model generates,
 * tokenizes and stores other things.
 *
 * The tests that use them are in the PHPUnit group `default-model`
 * (`@group default-model`). InferTestCase::setUp() fails them, with a message
 * saying why, when INFER_MODEL is another file; run the rest of the suite on
 * another model with `phpunit --exclude-group default-model`.
 */
final class DefaultModel
{
    /** What scripts/fetch-model.sh saves, and the sha256 it checks. */
    public const FILE = 'SmolLM2-135M-Instruct.Q4_1.gguf';
    public const SHA256 = 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53';

    /** The model the tests run on: INFER_MODEL (the Makefile sets it), else the default file under models/. */
    public static function path(): string
    {
        return getenv('INFER_MODEL') ?: dirname(__DIR__, 2) . '/models/' . self::FILE;
    }

    /** The extension under test: INFER_EXTENSION (the Makefile sets it), else the release build. */
    public static function extension(): string
    {
        return getenv('INFER_EXTENSION') ?: dirname(__DIR__, 2) . '/target/release/libinfer.so';
    }

    /** llama.context_length in the GGUF, which error messages quote. */
    public const CONTEXT_LENGTH = 8192;

    /** Tokenizer: 'Hello world' is two tokens, and 50 x 'word' with spaces is 50. */
    public const HELLO_WORLD_TOKENS = 2;
    public const FIFTY_WORDS_TOKENS = 50;

    /** raw('1, 2, 3, 4, 5, 6,', maxTokens: 20), greedy. */
    public const COUNTING = ' 7, 8, 9, 10, 11, 12';

    /** The answer to the few-shot JSON prompt "Tom is 3." → "Ann is 7.". */
    public const ANN = ['name' => 'Ann', 'age' => 7];

    /** The few-shot <think> prompt on 4+4: the whole text, and its first 4 tokens. */
    public const THINK_TEXT = '<think>Four plus four is eight.</think>8';
    public const THINK_ANSWER = '8';
    public const THINK_REASONING = 'Four plus four is eight.';
    public const THINK_FIRST_4_TOKENS = '<think>Four';

    /** The spec's extraction example, with the PERSON schema. */
    public const MARIA = ['name' => 'Maria', 'age' => 31, 'city' => 'Lisbon'];
}
