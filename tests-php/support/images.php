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
