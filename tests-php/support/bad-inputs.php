<?php
// The bad-input matrix. Each case runs in a PHP process of its own
// (run-case.php, driven by BadInputTest), so that a crash fails one case and
// not the suite, and so that anything printed to stdout or stderr is caught.
//
// name => [function, expected exception class or 'ok', message fragment].
// 'ok' marks a huge-but-valid input that may legitimately succeed; it must do
// so within the runner's time and memory limits.

declare(strict_types=1);

use Displace\Infer\{Grammar, Image, InferenceException, InferException, Message, Model, ModelLoadException, Prompt, Response};

require_once __DIR__ . '/DefaultModel.php';
require_once __DIR__ . '/images.php';
$modelPath = Displace\Infer\Tests\DefaultModel::path();
$model = static function () use ($modelPath): Model {
    static $m = null;
    return $m ??= Model::load($modelPath);
};
/** A file under this process's scratch directory (run-case.php removes it). */
$file = static function (string $bytes, string $name = 'model.gguf'): string {
    $dir = getenv('INFER_SCRATCH') ?: sys_get_temp_dir();
    file_put_contents("$dir/$name", $bytes);
    return "$dir/$name";
};
/** The real model with $patch applied to its bytes, as a scratch file. */
$patched = static function (callable $patch) use ($modelPath, $file): string {
    return $file($patch((string) file_get_contents($modelPath)));
};
$u64 = static fn (int $n): string => pack('P', $n);
$u32 = static fn (int $n): string => pack('V', $n);
$gguf = static fn (int $version, int $tensors, int $kvs, string $rest = ''): string => 'GGUF' . $u32($version) . $u64($tensors) . $u64($kvs) . $rest;
$ggufString = static fn (string $s): string => $u64(strlen($s)) . $s;
/** GGUF value types. */
[$T_UINT32, $T_STRING, $T_ARRAY] = [4, 8, 9];
$seeded = static function (int $n, int $seed): string {
    mt_srand($seed);
    $out = '';
    for ($i = 0; $i < $n; $i++) {
        $out .= chr(mt_rand(0, 255));
    }
    return $out;
};
$flip = static fn (int $offset) => static function (string $bytes) use ($offset): string {
    $bytes[$offset] = chr(ord($bytes[$offset]) ^ 0xFF);
    return $bytes;
};
$nested = static function (int $depth): array {
    $schema = ['type' => 'string'];
    for ($i = 0; $i < $depth; $i++) {
        $schema = ['type' => 'array', 'items' => $schema];
    }
    return $schema;
};
$ask = static fn (array $options = [], int $maxTokens = 4, int $nCtx = 512, float $temperature = 0.0) => static fn () => $model()->chat(Prompt::user('Hi'), maxTokens: $maxTokens, nCtx: $nCtx, temperature: $temperature, options: $options);
$schema = static fn ($s) => static fn () => Grammar::fromSchema($s);
$check = static fn (string $g) => static fn () => Grammar::check($g);
$L = ModelLoadException::class;
$I = InferenceException::class;
$B = InferException::class;

$cases = [
    // Model files.
    'file: missing' => [fn () => Model::load('/nonexistent/dir/model.gguf'), $L, 'model file not found: /nonexistent/dir/model.gguf'],
    'file: empty path' => [fn () => Model::load(''), $L, 'model file not found'],
    'file: directory' => [fn () => Model::load(sys_get_temp_dir()), $L, 'model path is a directory'],
    'file: empty' => [fn () => Model::load($file('')), $L, 'model file is empty'],
    'file: random bytes' => [fn () => Model::load($file($seeded(4096, 1))), $L, 'not a GGUF file'],
    'file: text' => [fn () => Model::load($file("hello world\n")), $L, 'not a GGUF file (the first 4 bytes are "hell"'],
    'file: magic only' => [fn () => Model::load($file('GGUF')), $L, 'llama.cpp could not load'],
    'file: magic and garbage' => [fn () => Model::load($file('GGUF' . $seeded(4096, 2))), $L, 'llama.cpp could not load'],
    'file: version 0' => [fn () => Model::load($file($gguf(0, 0, 0))), $L, 'llama.cpp could not load'],
    'file: version 999' => [fn () => Model::load($file($gguf(999, 0, 0))), $L, 'llama.cpp could not load'],
    'file: no tensors, no metadata' => [fn () => Model::load($file($gguf(3, 0, 0))), $L, 'llama.cpp could not load'],
    'file: 2^62 tensors' => [fn () => Model::load($file($gguf(3, 1 << 62, 0))), $L, 'llama.cpp could not load'],
    'file: 2^62 metadata pairs' => [fn () => Model::load($file($gguf(3, 0, 1 << 62))), $L, 'llama.cpp could not load'],
    'file: -1 tensors' => [fn () => Model::load($file($gguf(3, -1, 0))), $L, 'llama.cpp could not load'],
    'file: key of 2^60 bytes' => [fn () => Model::load($file($gguf(3, 0, 1, $u64(1 << 60) . 'abc'))), $L, 'llama.cpp could not load'],
    'file: string value of 2^60 bytes' => [fn () => Model::load($file($gguf(3, 0, 1, $ggufString('general.name') . $u32($T_STRING) . $u64(1 << 60) . 'x'))), $L, 'llama.cpp could not load'],
    'file: array of 2^60 items' => [fn () => Model::load($file($gguf(3, 0, 1, $ggufString('general.tags') . $u32($T_ARRAY) . $u32($T_UINT32) . $u64(1 << 60)))), $L, 'llama.cpp could not load'],
    'file: unknown value type' => [fn () => Model::load($file($gguf(3, 0, 1, $ggufString('general.name') . $u32(77) . $u64(0)))), $L, 'llama.cpp could not load'],
    'file: tensor with 1000 dimensions' => [fn () => Model::load($file($gguf(3, 1, 0, $ggufString('t') . $u32(1000) . str_repeat($u64(1), 8)))), $L, 'llama.cpp could not load'],
    'file: tensor of 2^62 elements' => [fn () => Model::load($file($gguf(3, 1, 0, $ggufString('t') . $u32(2) . $u64(1 << 31) . $u64(1 << 31) . $u32(0) . $u64(0)))), $L, 'llama.cpp could not load'],
    'file: truncated at 8 bytes' => [fn () => Model::load($file(substr((string) file_get_contents($modelPath, length: 8), 0, 8))), $L, 'llama.cpp could not load'],
    'file: truncated at 24 bytes' => [fn () => Model::load($file((string) file_get_contents($modelPath, length: 24))), $L, 'llama.cpp could not load'],
    'file: truncated in the metadata' => [fn () => Model::load($file((string) file_get_contents($modelPath, length: 4096))), $L, 'llama.cpp could not load'],
    'file: truncated in the tensor index' => [fn () => Model::load($file((string) file_get_contents($modelPath, length: 1 << 20))), $L, 'llama.cpp could not load'],
    'file: truncated in the tensor data' => [fn () => Model::load($file((string) file_get_contents($modelPath, length: 8 << 20))), $L, 'llama.cpp could not load'],
    'file: truncated by one byte' => [fn () => Model::load($patched(fn (string $b) => substr($b, 0, -1))), $L, 'llama.cpp could not load'],
    'file: flipped version byte' => [fn () => Model::load($patched($flip(4))), $L, 'llama.cpp could not load'],
    'file: flipped tensor count' => [fn () => Model::load($patched($flip(8))), $L, 'llama.cpp could not load'],
    'file: flipped high byte of the tensor count' => [fn () => Model::load($patched($flip(15))), $L, 'llama.cpp could not load'],
    'file: flipped metadata count' => [fn () => Model::load($patched($flip(16))), $L, 'llama.cpp could not load'],
    'file: flipped first key length' => [fn () => Model::load($patched($flip(24))), $L, 'llama.cpp could not load'],
    'file: flipped first value type' => [fn () => Model::load($patched(fn (string $b) => $flip(32 + unpack('P', substr($b, 24, 8))[1])($b))), $L, 'llama.cpp could not load'],
    'file: /dev/zero' => [fn () => Model::load('/dev/zero'), $L, 'model path is not a regular file: /dev/zero'],
    'file: /dev/null' => [fn () => Model::load('/dev/null'), $L, 'model path is not a regular file: /dev/null'],
    'file: path with NUL' => [fn () => Model::load("$modelPath\0.txt"), $L, 'model path contains a NUL byte'],
    'file: path not UTF-8' => [fn () => Model::load($file('GGUF', "m\xff\xfe.gguf")), $L, 'model path is not valid UTF-8'],
    'file: missing path not UTF-8' => [fn () => Model::load("/nonexistent/\xff.gguf"), $L, 'model file not found'],
    'file: symlink loop' => [function () use ($file) {
        $a = $file('', 'loop-a');
        unlink($a);
        symlink($a, $a);
        return Model::load($a);
    }, $L, 'cannot read model file'],

    // Arguments and options.
    'load: n_threads 0' => [fn () => Model::load($modelPath, ['n_threads' => 0]), $L, 'option "n_threads" must be an int between 1 and 512, got int 0'],
    'load: n_threads NAN' => [fn () => Model::load($modelPath, ['n_threads' => NAN]), $L, 'option "n_threads" must be an int between 1 and 512, got float NAN'],
    'load: n_threads PHP_INT_MAX' => [fn () => Model::load($modelPath, ['n_threads' => PHP_INT_MAX]), $L, 'option "n_threads" must be an int between 1 and 512, got int ' . PHP_INT_MAX],
    'load: n_gpu_layers string' => [fn () => Model::load($modelPath, ['n_gpu_layers' => '9']), $L, 'option "n_gpu_layers" must be an int >= 0, got string'],
    'load: use_mmap int' => [fn () => Model::load($modelPath, ['use_mmap' => 1]), $L, 'option "use_mmap" must be a bool, got int 1'],
    'load: integer key' => [fn () => Model::load($modelPath, [true]), $L, 'option "0" is an integer key'],
    'load: unknown key' => [fn () => Model::load($modelPath, ['threads' => 2]), $L, 'option "threads" is not a known option'],
    'chat: maxTokens 0' => [fn () => $model()->chat(Prompt::user('Hi'), maxTokens: 0), $I, 'maxTokens must be at least 1, got 0'],
    'chat: maxTokens PHP_INT_MIN' => [fn () => $model()->chat(Prompt::user('Hi'), maxTokens: PHP_INT_MIN), $I, 'maxTokens must be at least 1'],
    'chat: maxTokens PHP_INT_MAX in a small context' => [fn () => $model()->chat(Prompt::user('Hi'), maxTokens: PHP_INT_MAX, nCtx: 48)->finishReason(), 'ok', ''],
    'chat: nCtx 0' => [fn () => $model()->chat(Prompt::user('Hi'), nCtx: 0), $I, 'nCtx must be at least 1, got 0'],
    'chat: nCtx PHP_INT_MAX' => [fn () => $model()->chat(Prompt::user('Hi'), nCtx: PHP_INT_MAX), $I, 'exceeds the context length the model was trained for ('],
    'chat: nCtx whose cache cannot be allocated' => [function () use ($patched, $file) {
        // A copy of the model that claims a context of 2^31 tokens: the KV cache of nCtx = 2^24 is about 380 GB.
        // (At 2^30 llama.cpp fills 16 GB of per-cell bookkeeping before the cache itself fails: two minutes.)
        $path = $patched(function (string $b): string {
            $at = strpos($b, 'llama.context_length') + strlen('llama.context_length') + 4;
            return substr_replace($b, pack('V', 0x7FFFFFFF), $at, 4);
        });
        return Model::load($path)->chat(Prompt::user('Hi'), nCtx: 1 << 24);
    }, $I, 'could not create a context of nCtx = 16777216'],
    'chat: temperature NAN' => [fn () => $model()->chat(Prompt::user('Hi'), temperature: NAN), $I, 'temperature must be a finite number >= 0, got NAN'],
    'chat: temperature INF' => [fn () => $model()->chat(Prompt::user('Hi'), temperature: INF), $I, 'temperature must be a finite number >= 0, got INF'],
    'chat: temperature negative' => [fn () => $model()->chat(Prompt::user('Hi'), temperature: -0.5), $I, 'temperature must be a finite number >= 0, got -0.5'],
    'chat: seed PHP_INT_MIN' => [fn () => $model()->chat(Prompt::user('Hi'), maxTokens: 2, temperature: 1.0, seed: PHP_INT_MIN)->finishReason(), 'ok', ''],
    'raw: maxTokens -1' => [fn () => $model()->raw('Hi', maxTokens: -1), $I, 'maxTokens must be at least 1, got -1'],
    'option: top_k string' => [$ask(['top_k' => 'x']), $I, 'option "top_k" must be an int >= 0 (0 disables it), got string'],
    'option: top_k PHP_INT_MAX' => [$ask(['top_k' => PHP_INT_MAX]), $I, 'option "top_k" must be an int >= 0'],
    'option: top_p NAN' => [$ask(['top_p' => NAN]), $I, 'option "top_p" must be a float greater than 0.0 and at most 1.0, got float NAN'],
    'option: top_p INF' => [$ask(['top_p' => INF]), $I, 'option "top_p" must be a float greater than 0.0 and at most 1.0, got float INF'],
    'option: min_p -INF' => [$ask(['min_p' => -INF]), $I, 'option "min_p" must be a float between 0.0 and 1.0, got float -INF'],
    'option: min_p 2' => [$ask(['min_p' => 2]), $I, 'option "min_p" must be a float between 0.0 and 1.0, got int 2'],
    'option: repeat_penalty NAN' => [$ask(['repeat_penalty' => NAN]), $I, 'option "repeat_penalty" must be a finite float > 0'],
    'option: repeat_penalty -1' => [$ask(['repeat_penalty' => -1.0]), $I, 'option "repeat_penalty" must be a finite float > 0'],
    // Windows past the context are the context (were 8.5 GB and 16 GB outside memory_limit).
    'option: repeat_last_n 2^31-1' => [$ask(['repeat_last_n' => 2147483647, 'repeat_penalty' => 1.1]), 'ok', ''],
    'option: dry_penalty_last_n 2^31-1' => [$ask(['dry_penalty_last_n' => 2147483647, 'dry_multiplier' => 0.8]), 'ok', ''],
    'option: samplers 100 KB of d' => [$ask(['samplers' => str_repeat('d', 100000)]), $I, 'names the sampler \'dry\' twice'],
    'option: samplers with a NUL' => [$ask(['samplers' => "k\0"]), $I, 'names the sampler \'\\0\''],
    'option: 300 dry breakers' => [$ask(['dry_sequence_breakers' => array_fill(0, 300, 'x')]), $I, 'at most 32 non-empty strings'],
    'option: stop string' => [$ask(['stop' => 'x']), $I, 'option "stop" must be a list of non-empty strings, got string'],
    'option: stop with an empty string' => [$ask(['stop' => ['']]), $I, 'option "stop" must be a list of non-empty strings, got an empty string'],
    'option: stop null' => [$ask(['stop' => null]), $I, 'option "stop" must be a list of non-empty strings, got null'],
    'option: cache_prompt string' => [$ask(['cache_prompt' => 'no']), $I, 'option "cache_prompt" must be a bool, got string'],
    'option: schema int' => [$ask(['schema' => 5]), $I, 'schema must be an array, a JSON string or a Displace\\Infer\\Schema, got int'],
    'option: grammar array' => [$ask(['grammar' => ['root']]), $I, 'option "grammar" must be a GBNF string, got array'],
    'option: schema and grammar' => [$ask(['schema' => [], 'grammar' => 'root ::= "a"']), $I, 'mutually exclusive'],
    'option: integer key' => [$ask([0 => 'stop']), $I, 'option "0" is an integer key'],
    'option: unknown key' => [$ask(['temperature' => 1.0]), $I, 'option "temperature" is not a known option'],

    // Prompts.
    'prompt: invalid UTF-8 message' => [fn () => Prompt::user("caf\xe9"), $B, 'message content is not valid UTF-8 (invalid byte at offset 3)'],
    'prompt: invalid UTF-8 raw prompt' => [fn () => $model()->raw("\xff\xfe"), $I, 'prompt is not valid UTF-8 (invalid byte at offset 0)'],
    'prompt: invalid UTF-8 countTokens' => [fn () => $model()->countTokens("ok\xc3"), $I, 'text is not valid UTF-8 (invalid byte at offset 2)'],
    'prompt: NUL in a message' => [fn () => $model()->chat(Prompt::user("a\0b")), $I, 'message 0 (user) contains a NUL byte'],
    'prompt: NUL in a raw prompt' => [fn () => $model()->raw("a\0b", maxTokens: 2), 'ok', ''],
    'prompt: 1 MB message' => [fn () => $model()->chat(Prompt::user(str_repeat('lorem ipsum ', 87382))), $I, 'tokens, which does not fit in nCtx = 2048'],
    'prompt: 1 MB raw prompt' => [fn () => $model()->raw(str_repeat('x', 1 << 20)), $I, 'tokens, which does not fit in nCtx = 2048'],
    'prompt: empty raw prompt' => [fn () => $model()->raw('', addBos: false), $I, 'prompt is empty'],
    'prompt: empty message' => [fn () => $model()->chat(Prompt::user(''), maxTokens: 2)->finishReason(), 'ok', ''],

    // Schemas.
    'schema: 10,000 nested PHP arrays' => [$schema($nested(10000)), $B, 'schema nesting is deeper than 128 levels at /items/items'],
    'schema: 100,000 nested levels of JSON text' => [$schema(str_repeat('{"items":', 100000) . '{}' . str_repeat('}', 100000)), $B, 'schema is not valid JSON: recursion limit exceeded'],
    'schema: recursive PHP array' => [function () {
        $a = ['type' => 'array'];
        $a['items'] = &$a;
        return Grammar::fromSchema($a);
    }, $B, 'schema nesting is deeper than 128 levels'],
    'schema: $ref cycle without a base case' => [$schema(['$ref' => '#/$defs/a', '$defs' => ['a' => ['$ref' => '#/$defs/b'], 'b' => ['$ref' => '#/$defs/a']]]), $B, '$ref'],
    'schema: recursion with no way out' => [$schema(['$defs' => ['n' => ['type' => 'object', 'properties' => ['next' => ['$ref' => '#/$defs/n']], 'required' => ['next']]], '$ref' => '#/$defs/n']), $B, 'recurses with no base case: no finite value satisfies it'],
    'schema: $ref to a missing definition' => [$schema(['$ref' => '#/$defs/nope']), $B, '#/$defs/nope'],
    'schema: $ref with a malformed pointer' => [$schema(['$ref' => '#/$defs/~9']), $B, '$ref'],
    'schema: remote $ref' => [$schema(['$ref' => 'https://example.com/s.json']), $B, 'https://example.com/s.json'],
    'schema: minLength 10^12' => [$schema(['type' => 'string', 'minLength' => 1000000000000]), $B, 'minLength'],
    'schema: maxItems 10^15 with minItems 10^15' => [$schema(['type' => 'array', 'minItems' => 10 ** 15, 'maxItems' => 10 ** 15]), $B, 'minItems'],
    'schema: minLength above maxLength' => [$schema(['type' => 'string', 'minLength' => 5, 'maxLength' => 2]), $B, 'minLength'],
    'schema: invalid regex' => [$schema(['type' => 'string', 'pattern' => '(ab']), $B, 'pattern'],
    'schema: catastrophic regex' => [$schema(['type' => 'string', 'pattern' => '^(a+)+$']), 'ok', ''],
    'schema: regex repetition of a million' => [$schema(['type' => 'string', 'pattern' => '^a{1000000}$']), $B, 'pattern'],
    'schema: type is a number' => [$schema(['type' => 5]), $B, 'type'],
    'schema: properties is a list' => [$schema(['type' => 'object', 'properties' => [1, 2]]), $B, 'properties'],
    'schema: required is a string' => [$schema(['type' => 'object', 'required' => 'a']), $B, 'required'],
    'schema: minLength is a string' => [$schema(['type' => 'string', 'minLength' => '3']), $B, 'minLength'],
    'schema: empty enum' => [$schema(['enum' => []]), $B, 'enum'],
    'schema: false' => [$schema(false), $B, 'schema must be an array, a JSON string or a Displace\\Infer\\Schema, got bool'],
    'schema: false as JSON text' => [$schema('false'), $B, 'schema can never be satisfied: no value is valid at the root (#)'],
    'schema: false property' => [$schema(['type' => 'object', 'properties' => ['a' => false], 'required' => ['a']]), $B, 'can never be satisfied'],
    'schema: NAN' => [$schema(['type' => 'number', 'maximum' => NAN]), $B, 'NAN'],
    'schema: INF' => [$schema(['enum' => [INF]]), $B, 'INF'],
    'schema: resource' => [$schema(['const' => STDIN]), $B, 'resource'],
    'schema: object in a list at the root' => [$schema([(object) ['type' => 'string']]), $B, 'schema must be an object or a boolean, got array'],
    'schema: closure' => [$schema(['const' => fn () => 1]), $B, 'schema holds an object of class Closure at /const'],
    'schema: DateTime object' => [$schema(['type' => 'object', 'properties' => ['when' => new DateTime('2020-01-01')]]), $B, 'object of class DateTime at /properties/when'],
    'schema: string not UTF-8' => [$schema(['type' => 'string', 'description' => "\xff"]), $B, 'not valid UTF-8'],
    'schema: JSON text not UTF-8' => [$schema("{\"description\": \"\xff\"}"), $B, 'schema is not valid UTF-8'],
    'schema: invalid JSON text' => [$schema('{"type": '), $B, 'schema is not valid JSON'],
    'schema: misspelled keyword' => [$schema(['type' => 'string', 'minLenght' => 2]), $B, 'did you mean "minLength"'],
    'schema: unsupported keyword' => [$schema(['type' => 'array', 'uniqueItems' => true]), $B, 'uniqueItems'],
    'schema: through chat()' => [$ask(['schema' => ['type' => 'string', 'pattern' => '(']]), $I, 'pattern'],

    // Grammars.
    'grammar: empty' => [$check(''), $B, 'grammar is empty'],
    'grammar: no root' => [$check('answer ::= "yes"'), $B, 'root'],
    'grammar: undefined rule' => [$check('root ::= answer'), $B, 'answer'],
    'grammar: left recursion' => [$check('root ::= root "a" | "a"'), $B, 'rule "root" is left-recursive'],
    'grammar: inverted range' => [$check('root ::= [z-a]'), $B, 'range'],
    'grammar: unterminated string' => [$check('root ::= "abc'), $B, 'line 1'],
    'grammar: unterminated class' => [$check('root ::= [abc'), $B, 'line 1'],
    'grammar: repetition in the billions' => [$check('root ::= "a"{3000000000}'), $B, 'repetition'],
    'grammar: repetition in the thousands' => [$check('root ::= "a"{5000}'), $B, 'repetition'],
    'grammar: matches nothing' => [$check("root ::= item\nitem ::= \"(\" item \")\""), $B, 'matches nothing'],
    'grammar: NUL byte' => [$check("root ::= \"a\0\""), $B, 'invalid grammar'],
    'grammar: not UTF-8' => [$check("root ::= \"\xff\""), $B, 'not valid UTF-8'],
    'grammar: 1 MB, usable' => [function () use ($model): string {
        // 100 groups of 100 rules, each an 85-character literal: just under 1 MB of GBNF.
        $g = 'root ::= ' . implode(' ', array_map(fn (int $k) => "g$k", range(0, 99))) . "\n";
        for ($k = 0; $k < 100; $k++) {
            $g .= "g$k ::= " . implode(' ', array_map(fn (int $j) => 'r' . (100 * $k + $j), range(0, 99))) . "\n";
        }
        for ($i = 0; $i < 10000; $i++) {
            $g .= "r$i ::= \"" . str_pad("item $i ", 85, 'x') . "\"\n";
        }
        Grammar::check($g);
        return $model()->chat(Prompt::user('Hi'), maxTokens: 4, options: ['grammar' => $g])->finishReason();
    }, 'ok', ''],
    'grammar: over 1 MB' => [$check('root ::= ' . implode(' | ', array_map(fn (int $i) => "\"w$i\"", range(1, 110000)))), $B, 'more than the limit of 1048576 bytes'],
    'grammar: 1 MB of garbage' => [$check(str_repeat('root ::= ((( ', 90000)), $B, 'invalid grammar'],
    'grammar: through chat()' => [$ask(['grammar' => 'root ::= [z-a]']), $I, 'invalid grammar'],
    'grammar: NUL through chat()' => [$ask(['grammar' => "root ::= \"\0\""]), $I, 'invalid grammar'],

    // Lifecycle.
    'lifecycle: chat after close' => [function () use ($modelPath) {
        $m = Model::load($modelPath);
        $m->close();
        $m->close();
        return $m->chat(Prompt::user('Hi'));
    }, $I, 'model has been closed'],
    'lifecycle: countTokens after close' => [function () use ($modelPath) {
        $m = Model::load($modelPath);
        $m->close();
        return $m->countTokens('Hi');
    }, $I, 'model has been closed'],
    'lifecycle: new Model' => [fn () => new Model(), $B, 'Model::load()'],
    'lifecycle: clone Model' => [fn () => clone $model(), \Error::class, 'Trying to clone an uncloneable object of class Displace\Infer\Model'],
    'lifecycle: clone Prompt' => [fn () => clone Prompt::user('a'), \Error::class, 'Trying to clone an uncloneable object'],
    'lifecycle: serialize Model' => [fn () => serialize($model()), \Exception::class, "Serialization of 'Displace\\Infer\\Model' is not allowed"],
    'lifecycle: unserialize Model' => [fn () => unserialize(sprintf('O:%d:"%s":0:{}', strlen(Model::class), Model::class)), \Exception::class, "Unserialization of 'Displace\\Infer\\Model' is not allowed"],
    'lifecycle: unserialize Response' => [fn () => unserialize(sprintf('O:%d:"%s":1:{s:1:"x";i:1;}', strlen(Response::class), Response::class)), \Exception::class, "Unserialization of 'Displace\\Infer\\Response' is not allowed"],
];
// Hostile images: each refused with its reason, none decoded past its header's claim.
$png = Displace\Infer\Tests\Support\png(16, 16, $seeded(16 * 16 * 3, 7));
$img = static fn (string $bytes) => static fn () => Image::fromBytes($bytes);
$cases += [
    'image: random bytes' => [$img($seeded(4096, 3)), $B, 'not an image in a known format'],
    'image: PNG magic and garbage' => [$img("\x89PNG\r\n\x1a\n" . $seeded(4096, 4)), $B, 'the PNG image could not be decoded'],
    'image: PNG cut after its header' => [$img(substr($png, 0, 40)), $B, 'the PNG image could not be decoded'],
    'image: PNG with its data flipped' => [$img($flip(60)($png)), $B, 'the PNG image could not be decoded'],
    'image: PNG claiming 100000 x 100000' => [$img(Displace\Infer\Tests\Support\png_claiming(100000, 100000)), $B, 'declares 100000 x 100000 pixels'],
    'image: PNG claiming 2^31 x 1' => [$img(Displace\Infer\Tests\Support\png_claiming(0x7FFFFFFF, 1)), $B, 'declares 2147483647 x 1 pixels'],
    'image: PNG of 16777216 x 1 (within the pixels, past the side)' => [$img(Displace\Infer\Tests\Support\png_claiming(16777216, 1)), $B, 'the image declares 16777216 x 1 pixels, a side longer than infer.max_image_side (16384)'],
    // Built when run: 3 MB of iCCP that inflate to 500 MB; the profile is dropped past 8 MiB and the pixel decodes.
    'image: PNG with an ICC profile inflating to 500 MB' => [static fn () => Image::fromBytes(Displace\Infer\Tests\Support\png_with_iccp(Displace\Infer\Tests\Support\png(1, 1, "\x01\x02\x03"), Displace\Infer\Tests\Support\zlib_zeros(254000))), 'ok', ''],
    'image: BMP claiming 60000 x 60000' => [$img(Displace\Infer\Tests\Support\bmp_claiming(60000, 60000)), $B, 'declares 60000 x 60000 pixels'],
    'image: BMP with a negative height' => [$img(Displace\Infer\Tests\Support\bmp_claiming(4, -4, str_repeat("\x00", 48))), 'ok', ''],
    'image: GIF claiming 65535 x 65535' => [$img(Displace\Infer\Tests\Support\gif_claiming(65535, 65535)), $B, 'declares 65535 x 65535 pixels'],
    'image: GIF cut' => [$img(substr(Displace\Infer\Tests\Support\gif_claiming(8, 8), 0, 16)), $B, 'the GIF image could not be decoded'],
    'image: JPEG claiming 65000 x 65000' => [$img(Displace\Infer\Tests\Support\jpeg_claiming(65000, 65000)), $B, 'declares 65000 x 65000 pixels'],
    // The JPEG decoder is lenient: a scan with no data decodes to a grey picture.
    'image: JPEG headers without data' => [$img(Displace\Infer\Tests\Support\jpeg_claiming(64, 64)), 'ok', ''],
    'image: WebP magic and garbage' => [$img('RIFF' . pack('V', 4000) . 'WEBPVP8 ' . $seeded(4000, 5)), $B, 'the WebP image could not be decoded'],
    'image: pixels of the wrong length' => [fn () => Image::fromPixels(3, 3, 'abc'), $B, '3 bytes of pixels given for 3 x 3 RGB, which takes 27'],
    'image: for a model without a projector' => [fn () => $model()->chat(Prompt::user([Image::fromPixels(2, 2, str_repeat("\x00", 12)), 'Hi']), 2), $I, 'loaded without an image projector'],
];
foreach ([Model::class, Prompt::class, Message::class, Response::class, Grammar::class, Image::class] as $class) {
    $cases["lifecycle: newInstanceWithoutConstructor $class"] = [
        fn () => (new ReflectionClass($class))->newInstanceWithoutConstructor(),
        \ReflectionException::class,
        'cannot be instantiated without invoking its constructor',
    ];
}
return $cases;
