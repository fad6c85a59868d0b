<?php

declare(strict_types=1);

// Image files written in pure PHP for the tests (no GD, no zlib: the PHPs
// built from source with --disable-all have neither), so that what a test
// decodes is known byte for byte, and hostile files can be made on purpose.

namespace Displace\Infer\Tests\Support;

/** A PNG chunk: length, type, data, CRC-32 of type and data. */
function png_chunk(string $type, string $data): string
{
    return pack('N', strlen($data)) . $type . $data . pack('N', hexdec(hash('crc32b', $type . $data)));
}

/** A zlib stream of stored (uncompressed) deflate blocks. */
function zlib_stored(string $data): string
{
    $out = "\x78\x01";
    $blocks = str_split($data, 65535);
    if ($data === '') {
        $blocks = [''];
    }
    foreach ($blocks as $i => $block) {
        $final = $i === count($blocks) - 1 ? 1 : 0;
        $len = strlen($block);
        $out .= chr($final) . pack('v', $len) . pack('v', $len ^ 0xFFFF) . $block;
    }
    return $out . pack('N', hexdec(hash('adler32', $data)));
}

/** A PNG (8-bit RGB) of $width × $height pixels from RGB bytes, row by row. */
function png(int $width, int $height, string $rgb): string
{
    $raw = '';
    for ($y = 0; $y < $height; $y++) {
        $raw .= "\x00" . substr($rgb, $y * $width * 3, $width * 3);
    }
    return png_claiming($width, $height, zlib_stored($raw));
}

/** A PNG header claiming $width × $height, followed by $idat as its pixel data. */
function png_claiming(int $width, int $height, string $idat = ''): string
{
    return "\x89PNG\r\n\x1a\n"
        . png_chunk('IHDR', pack('NNCCCCC', $width, $height, 8, 2, 0, 0, 0))
        . png_chunk('IDAT', $idat)
        . png_chunk('IEND', '');
}

/** A 24-bit BMP of $width × $height pixels from RGB bytes, row by row (top first). */
function bmp(int $width, int $height, string $rgb): string
{
    $row = ($width * 3 + 3) & ~3;
    $pixels = '';
    for ($y = $height - 1; $y >= 0; $y--) {
        $line = '';
        for ($x = 0; $x < $width; $x++) {
            $p = substr($rgb, ($y * $width + $x) * 3, 3);
            $line .= $p[2] . $p[1] . $p[0];
        }
        $pixels .= str_pad($line, $row, "\x00");
    }
    return bmp_claiming($width, $height, $pixels);
}

/** A BMP header claiming $width × $height, followed by $pixels. */
function bmp_claiming(int $width, int $height, string $pixels = ''): string
{
    $header = 14 + 40;
    return 'BM' . pack('VvvV', $header + strlen($pixels), 0, 0, $header)
        . pack('VVVvvVVVVVV', 40, $width, $height, 1, 24, 0, strlen($pixels), 2835, 2835, 0, 0)
        . $pixels;
}

/** A GIF header (logical screen) claiming $width × $height, with one image as big and no data. */
function gif_claiming(int $width, int $height): string
{
    return 'GIF89a' . pack('vvCCC', $width, $height, 0, 0, 0)
        . ',' . pack('vvvvC', 0, 0, $width, $height, 0) . "\x02\x00;";
}

/**
 * A JPEG's headers (SOI, a baseline SOF0 of one grey component claiming $width × $height, one Huffman table and the
 * start of a scan) and no pixel data.
 */
function jpeg_claiming(int $width, int $height): string
{
    $dqt = "\xFF\xDB" . pack('n', 67) . "\x00" . str_repeat("\x01", 64);
    $dht = "\xFF\xC4" . pack('n', 20) . "\x00" . "\x01" . str_repeat("\x00", 15) . "\x00";
    $dhtAc = "\xFF\xC4" . pack('n', 20) . "\x10" . "\x01" . str_repeat("\x00", 15) . "\x00";
    $sof = "\xFF\xC0" . pack('nCnnC', 11, 8, $height, $width, 1) . "\x01\x11\x00";
    $sos = "\xFF\xDA" . pack('n', 8) . "\x01" . "\x01\x00" . "\x00\x3F\x00";
    return "\xFF\xD8" . $dqt . $sof . $dht . $dhtAc . $sos . "\xFF\xD9";
}

/** RGB bytes of a $width × $height image of one colour. */
function solid(int $width, int $height, int $r, int $g, int $b): string
{
    return str_repeat(chr($r) . chr($g) . chr($b), $width * $height);
}

/** The image's identity as the extension defines it, computed here: SHA-256 of width, height (LE u32) and pixels. */
function pixels_sha256(int $width, int $height, string $rgb): string
{
    return hash('sha256', pack('VV', $width, $height) . $rgb);
}

/**
 * A zlib stream that inflates to 1 + 2064 × $groups zero bytes, written by hand (one fixed-Huffman deflate block:
 * a literal zero, then "258 bytes from 1 back" over and over, 13 bits each), so that no zlib extension is needed and
 * a few megabytes stand for hundreds.
 */
function zlib_zeros(int $groups): string
{
    // Bits in stream order; a Huffman code goes in most significant bit first.
    $code = static fn (int $value, int $length): string => str_pad(decbin($value), $length, '0', STR_PAD_LEFT);
    $head = '1' . '10' . $code(0x30, 8);           // BFINAL, BTYPE 01 (fixed codes, low bit first), literal 0
    $group = str_repeat($code(0xC5, 8) . $code(0, 5), 8); // 8 × (length 258: code 285; distance 1: code 0)
    $end = $code(0, 7);                            // end of block: code 256
    $bytes = static function (string $bits): string {
        $out = '';
        foreach (str_split($bits, 8) as $byte) {
            $out .= chr(bindec(strrev(str_pad($byte, 8, '0'))));
        }
        return $out;
    };
    // The head and the first group are 115 bits: 14 bytes and 3 bits over, the group's last 3. Each further group
    // then makes 13 bytes that are the same every time, leaving the same 3 bits over.
    $first = $head . $group;
    $over = substr($group, -3);
    $deflate = $bytes(substr($first, 0, 112))
        . str_repeat($bytes($over . substr($group, 0, 101)), $groups - 1)
        . $bytes($over . $end);
    $length = 1 + 258 * 8 * $groups;
    $adler = (($length % 65521) << 16) | 1;        // a = 1 + the bytes' sum (0), b = the sum of each step's a
    return "\x78\x01" . $deflate . pack('N', $adler);
}

/** $png (from png()) with an iCCP chunk (an ICC profile named "icc") holding $zlib, placed before its pixels. */
function png_with_iccp(string $png, string $zlib): string
{
    $ihdrEnd = 8 + 8 + 13 + 4;
    return substr($png, 0, $ihdrEnd) . png_chunk('iCCP', "icc\x00\x00" . $zlib) . substr($png, $ihdrEnd);
}
