<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

/**
 * The embedding model of the tests, all-MiniLM-L6-v2 converted to GGUF by
 * scripts/fetch-embedding-model.sh (`make embedding-model`), its test-only
 * cross-encoder variant, and the independent float64 reference forward pass
 * (scripts/embedding_reference.py, in the converter's virtualenv) that the
 * tests judge the extension's vectors and scores with.
 */
final class EmbeddingModel
{
    /** The seed of the test cross-encoder's random classification head. */
    public const RANK_SEED = 42;

    private static function root(): string
    {
        return dirname(__DIR__, 2);
    }

    /** INFER_EMBEDDING_MODEL (the Makefile sets it), else the file under models/. */
    public static function path(): string
    {
        return getenv('INFER_EMBEDDING_MODEL') ?: self::root() . '/models/all-MiniLM-L6-v2.F16.gguf';
    }

    /** The same BERT with rank pooling and a random head: a cross-encoder for tests only. */
    public static function rankTestPath(): string
    {
        return dirname(self::path()) . '/minilm-rank-test.F16.gguf';
    }

    /**
     * Run the reference on $input (see scripts/embedding_reference.py).
     *
     * @param array<string, mixed> $input
     * @param list<string> $flags
     * @return array<string, mixed>
     */
    public static function reference(array $input, array $flags = []): array
    {
        $python = self::root() . '/target/venv-convert/bin/python';
        $script = self::root() . '/scripts/embedding_reference.py';
        $source = dirname(self::path()) . '/all-MiniLM-L6-v2';
        foreach ([$python, $script, $source] as $needed) {
            if (!file_exists($needed)) {
                throw new \RuntimeException("$needed is missing: run `make embedding-model`");
            }
        }
        $cmd = array_merge([$python, $script, '--model-dir', $source], $flags);
        $process = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        fwrite($pipes[0], json_encode($input, JSON_THROW_ON_ERROR));
        fclose($pipes[0]);
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $status = proc_close($process);
        if ($status !== 0) {
            throw new \RuntimeException("the reference failed ($status): $err");
        }
        return json_decode((string) $out, true, flags: JSON_THROW_ON_ERROR);
    }
}
