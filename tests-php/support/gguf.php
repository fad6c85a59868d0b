<?php
// A reader for the metadata of a GGUF file, written from the format's
// specification (github.com/ggml-org/ggml/blob/master/docs/gguf.md) and
// independent of llama.cpp, so that tests can compare what the extension
// reports with what the file says.

declare(strict_types=1);

namespace Displace\Infer\Tests\Support;

/**
 * The key/value metadata of the GGUF file at $path: scalars and strings as PHP
 * values, arrays as ['array' => element type, 'count' => n] (their elements
 * are skipped).
 *
 * @return array<string, mixed>
 */
function gguf_metadata(string $path): array
{
    $fh = fopen($path, 'rb');
    if ($fh === false) {
        throw new \RuntimeException("cannot open $path");
    }
    try {
        $read = static function (int $n) use ($fh, $path): string {
            $bytes = $n === 0 ? '' : fread($fh, $n);
            if ($bytes === false || strlen($bytes) !== $n) {
                throw new \RuntimeException("$path: truncated GGUF metadata");
            }
            return $bytes;
        };
        $u32 = static fn (): int => unpack('V', $read(4))[1];
        $u64 = static fn (): int => unpack('P', $read(8))[1];
        $string = static fn (): string => $read($u64());
        // Sizes of the fixed-width types, by type id.
        $fixed = [0 => 1, 1 => 1, 2 => 2, 3 => 2, 4 => 4, 5 => 4, 6 => 4, 7 => 1, 10 => 8, 11 => 8, 12 => 8];
        $scalar = static function (int $type) use ($read, $string): mixed {
            return match ($type) {
                0 => unpack('C', $read(1))[1],
                1 => unpack('c', $read(1))[1],
                2 => unpack('v', $read(2))[1],
                3 => unpack('s', $read(2))[1],
                4 => unpack('V', $read(4))[1],
                5 => unpack('l', $read(4))[1],
                6 => unpack('g', $read(4))[1],
                7 => $read(1) !== "\0",
                8 => $string(),
                10 => unpack('P', $read(8))[1],
                11 => unpack('q', $read(8))[1],
                12 => unpack('e', $read(8))[1],
                default => throw new \RuntimeException("GGUF value type $type is not a scalar"),
            };
        };

        if ($read(4) !== 'GGUF') {
            throw new \RuntimeException("$path is not a GGUF file");
        }
        $version = $u32();
        if ($version < 2) {
            throw new \RuntimeException("$path: GGUF version $version is not supported here");
        }
        $u64(); // tensor count
        $count = $u64();
        $out = [];
        for ($i = 0; $i < $count; $i++) {
            $key = $string();
            $type = $u32();
            if ($type !== 9) {
                $out[$key] = $scalar($type);
                continue;
            }
            $elementType = $u32();
            $n = $u64();
            if (isset($fixed[$elementType])) {
                fseek($fh, $n * $fixed[$elementType], SEEK_CUR);
            } else {
                for ($j = 0; $j < $n; $j++) {
                    $scalar($elementType);
                }
            }
            $out[$key] = ['array' => $elementType, 'count' => $n];
        }
        return $out;
    } finally {
        fclose($fh);
    }
}

/**
 * The number of weights in a GGUF file: the product of each tensor's
 * dimensions, summed, read from its tensor table (not by llama.cpp).
 */
function gguf_parameter_count(string $path): int
{
    $fh = fopen($path, 'rb');
    if ($fh === false) {
        throw new \RuntimeException("cannot open $path");
    }
    try {
        $u32 = static fn (): int => unpack('V', fread($fh, 4))[1];
        $u64 = static fn (): int => unpack('P', fread($fh, 8))[1];
        $skipString = static function () use ($fh, $u64): void {
            $n = $u64();
            if ($n > 0) {
                fseek($fh, $n, SEEK_CUR);
            }
        };
        $fixed = [0 => 1, 1 => 1, 2 => 2, 3 => 2, 4 => 4, 5 => 4, 6 => 4, 7 => 1, 10 => 8, 11 => 8, 12 => 8];
        $skipValue = static function (int $type) use (&$skipValue, $fh, $u32, $u64, $skipString, $fixed): void {
            if ($type === 8) {
                $skipString();
            } elseif ($type === 9) {
                $element = $u32();
                $n = $u64();
                for ($i = 0; $i < $n; $i++) {
                    $skipValue($element);
                }
            } else {
                fseek($fh, $fixed[$type], SEEK_CUR);
            }
        };
        fread($fh, 8); // magic, version
        $tensors = $u64();
        $keys = $u64();
        for ($i = 0; $i < $keys; $i++) {
            $skipString();
            $skipValue($u32());
        }
        $total = 0;
        for ($i = 0; $i < $tensors; $i++) {
            $skipString();
            $dims = $u32();
            $product = 1;
            for ($d = 0; $d < $dims; $d++) {
                $product *= $u64();
            }
            $u32(); // type
            $u64(); // offset
            $total += $product;
        }
        return $total;
    } finally {
        fclose($fh);
    }
}


/**
 * The bytes of a GGUF file (version 3, 32-byte alignment) with the metadata $kv (string or float values, written
 * as GGUF strings and float32) and the float32 tensors $tensors (name => [the dimensions as GGUF orders them,
 * fastest first; the values, or one value repeated]): for the hostile and mismatched files of the tests,
 * written from the specification, not by llama.cpp's writer.
 *
 * @param array<string, string|float> $kv
 * @param array<string, array{0: list<int>, 1: float|list<float>}> $tensors
 */
function gguf_bytes(array $kv, array $tensors): string
{
    $string = static fn (string $s): string => pack('P', strlen($s)) . $s;
    $out = 'GGUF' . pack('V', 3) . pack('P', count($tensors)) . pack('P', count($kv));
    foreach ($kv as $key => $value) {
        $out .= $string($key) . (is_string($value) ? pack('V', 8) . $string($value) : pack('V', 6) . pack('g', $value));
    }
    $data = '';
    foreach ($tensors as $name => [$dims, $values]) {
        $count = array_product($dims);
        $bytes = is_array($values) ? pack('g*', ...$values) : str_repeat(pack('g', $values), $count);
        if (strlen($bytes) !== 4 * $count) {
            throw new \LogicException("tensor $name: " . strlen($bytes) / 4 . " values for $count cells");
        }
        $out .= $string($name) . pack('V', count($dims));
        foreach ($dims as $d) {
            $out .= pack('P', $d);
        }
        $out .= pack('V', 0) . pack('P', strlen($data)); // type F32, offset in the data section
        $data .= $bytes . str_repeat("\0", (32 - strlen($bytes) % 32) % 32);
    }
    return $out . str_repeat("\0", (32 - strlen($out) % 32) % 32) . $data;
}
