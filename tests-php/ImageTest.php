<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Image;
use Displace\Infer\InferException;
use Displace\Infer\Message;
use Displace\Infer\Prompt;

use function Displace\Infer\Tests\Support\bmp;
use function Displace\Infer\Tests\Support\bmp_claiming;
use function Displace\Infer\Tests\Support\gif_claiming;
use function Displace\Infer\Tests\Support\jpeg_claiming;
use function Displace\Infer\Tests\Support\pixels_sha256;
use function Displace\Infer\Tests\Support\png;
use function Displace\Infer\Tests\Support\png_claiming;
use function Displace\Infer\Tests\Support\png_with_iccp;
use function Displace\Infer\Tests\Support\solid;
use function Displace\Infer\Tests\Support\zlib_zeros;

/**
 * Displace\Infer\Image: decoding, identity, limits and hostile files, and
 * images in a message. No model: the files are written here byte for byte
 * (tests-php/support/images.php), and the pixels and their hash are computed
 * here independently of the extension.
 */
final class ImageTest extends InferTestCase
{
    /** Pixels that differ everywhere, so that a decoder that mixes rows or channels is caught. */
    private static function pattern(int $width, int $height): string
    {
        $rgb = '';
        for ($i = 0; $i < $width * $height * 3; $i++) {
            $rgb .= chr(($i * 7 + intdiv($i, 5)) % 256);
        }
        return $rgb;
    }

    public function testAPngAndABmpOfTheSamePixelsAreTheSameImage(): void
    {
        $rgb = self::pattern(5, 3);
        $png = Image::fromBytes(png(5, 3, $rgb));
        $bmp = Image::fromBytes(bmp(5, 3, $rgb));
        $this->assertSame([5, 3, 'PNG'], [$png->width(), $png->height(), $png->format()]);
        $this->assertSame('BMP', $bmp->format());
        $this->assertSame(pixels_sha256(5, 3, $rgb), $png->sha256());
        $this->assertSame($png->sha256(), $bmp->sha256());
        $this->assertSame($png->sha256(), Image::fromPixels(5, 3, $rgb)->sha256());
    }

    public function testOnePixelChangedIsAnotherImage(): void
    {
        $rgb = self::pattern(4, 4);
        $other = $rgb;
        $other[17] = chr(ord($other[17]) ^ 1);
        $this->assertNotSame(Image::fromPixels(4, 4, $rgb)->sha256(), Image::fromPixels(4, 4, $other)->sha256());
        // The same bytes in another shape.
        $this->assertNotSame(Image::fromPixels(4, 4, $rgb)->sha256(), Image::fromPixels(8, 2, $rgb)->sha256());
    }

    public function testToPngGivesBackThePixels(): void
    {
        $rgb = self::pattern(7, 2);
        $png = Image::fromPixels(7, 2, $rgb)->toPng();
        $this->assertStringStartsWith("\x89PNG\r\n\x1a\n", $png);
        $again = Image::fromBytes($png);
        $this->assertSame(pixels_sha256(7, 2, $rgb), $again->sha256());
        $this->assertSame('PNG', $again->format());
    }

    public function testFromFileReadsTheFile(): void
    {
        $rgb = solid(6, 4, 10, 200, 30);
        $path = $this->tempFile(png(6, 4, $rgb), '.png');
        $image = Image::fromFile($path);
        $this->assertSame(pixels_sha256(6, 4, $rgb), $image->sha256());
    }

    /** @return iterable<string, array{string}> */
    public static function hugeClaims(): iterable
    {
        yield 'PNG' => [png_claiming(100000, 100000)];
        yield 'BMP' => [bmp_claiming(60000, 60000)];
        yield 'GIF' => [gif_claiming(65535, 65535)];
        yield 'JPEG' => [jpeg_claiming(65000, 65000)];
    }

    /**
     * A small file that claims a huge picture is refused from its header,
     * before anything is decoded: the peak memory of a process that tries it
     * (its own, so that nothing else this suite loaded counts) stays near
     * what PHP and the extension take anyway (10,000,000,000 pixels of RGB
     * would be 30 GB).
     *
     * @dataProvider hugeClaims
     */
    public function testAHugeDeclaredSizeIsRefusedBeforeDecoding(string $file): void
    {
        $e = $this->assertThrows(InferException::class, 'more than infer.max_image_pixels (16777216); nothing was decoded', fn () => Image::fromBytes($file));
        $this->assertMatchesRegularExpression('/declares \d+ x \d+ pixels/', $e->getMessage());
        $code = <<<'PHP'
            $peak = fn () => preg_match('/^VmHWM:\s+(\d+) kB/m', (string) file_get_contents('/proc/self/status'), $m) ? (int) $m[1] : -1;
            $before = $peak();
            try { Displace\Infer\Image::fromBytes((string) file_get_contents($argv[1])); } catch (Displace\Infer\InferException) {}
            echo $before, ' ', $peak();
            PHP;
        [$before, $after] = array_map('intval', explode(' ', $this->phpOutput([], $code, [$this->tempFile($file, '.img')])));
        $this->assertGreaterThan(0, $before);
        $this->assertLessThan(8 * 1024, $after - $before, "peak RSS went from $before to $after kB");
    }

    public function testTheLimitIsPhpIniMaxImagePixels(): void
    {
        $code = <<<'PHP'
            $rgb = str_repeat("\x01\x02\x03", 20 * 10);
            try { Displace\Infer\Image::fromPixels(20, 10, $rgb); echo "200 ok\n"; } catch (\Throwable $e) { echo get_class($e), ': ', $e->getMessage(), "\n"; }
            try { Displace\Infer\Image::fromPixels(20, 11, $rgb . str_repeat("\x00", 60)); echo "220 ok\n"; } catch (\Throwable $e) { echo get_class($e), ': ', $e->getMessage(), "\n"; }
            echo ini_get('infer.max_image_pixels'), "\n";
            var_dump(ini_set('infer.max_image_pixels', '999999'));
            PHP;
        $out = $this->phpOutput(['infer.max_image_pixels' => '200'], $code);
        $this->assertSame(
            "200 ok\n"
            . "Displace\\Infer\\InferException: the image declares 20 x 11 pixels, more than infer.max_image_pixels (200); nothing was decoded\n"
            . "200\nbool(false)\n",
            $out,
        );
    }

    public function testARefusedLimitFallsBackToTheDefaultWithAWarning(): void
    {
        $out = $this->phpOutput(['infer.max_image_pixels' => 'lots', 'display_startup_errors' => '1', 'display_errors' => 'stdout'], <<<'PHP'
            try { Displace\Infer\Image::fromPixels(4097, 4096, ''); } catch (\Throwable $e) { echo $e->getMessage(), "\n"; }
            PHP);
        $this->assertStringContainsString('infer: php.ini infer.max_image_pixels = "lots" is refused: not a whole number from 1 to 4294967296; images are bounded by the default of 16777216 pixels', $out);
        $this->assertStringContainsString('the image declares 4097 x 4096 pixels, more than infer.max_image_pixels (16777216)', $out);
    }

    public function testBytesThatAreNotAnImageAreRefused(): void
    {
        $this->assertThrows(InferException::class, 'the image is empty (0 bytes)', fn () => Image::fromBytes(''));
        $this->assertThrows(
            InferException::class,
            'the bytes are not an image in a known format (PNG, JPEG, GIF, WebP or BMP)',
            fn () => Image::fromBytes('%PDF-1.7 not an image'),
        );
        $png = png(8, 8, self::pattern(8, 8));
        $this->assertThrows(InferException::class, 'the PNG image could not be decoded', fn () => Image::fromBytes(substr($png, 0, -40)));
        $damaged = $png;
        $damaged[45] = chr(ord($damaged[45]) ^ 0xFF);
        $this->assertThrows(InferException::class, 'the PNG image could not be decoded', fn () => Image::fromBytes($damaged));
        $this->assertThrows(InferException::class, 'the PNG image could not be decoded: Format error decoding Png: Invalid image dimensions', fn () => Image::fromBytes(png_claiming(0, 5)));
    }

    public function testRawPixelsMustFillTheSize(): void
    {
        $this->assertThrows(
            InferException::class,
            '11 bytes of pixels given for 2 x 2 RGB, which takes 12',
            fn () => Image::fromPixels(2, 2, str_repeat("\x00", 11)),
        );
        $this->assertThrows(InferException::class, 'width must be a positive whole number of pixels, got 0', fn () => Image::fromPixels(0, 2, ''));
        $this->assertThrows(InferException::class, 'height must be a positive whole number of pixels, got -3', fn () => Image::fromPixels(2, -3, ''));
        $this->assertThrows(
            InferException::class,
            'height must be a positive whole number of pixels, got 4294967296',
            fn () => Image::fromPixels(1, 4294967296, ''),
        );
    }

    public function testFromFileRefusesWhatItCannotRead(): void
    {
        $missing = sys_get_temp_dir() . '/infer-no-such-image-' . getmypid() . '.png';
        $this->assertThrows(InferException::class, "cannot open image file $missing:", fn () => Image::fromFile($missing));
        $this->assertThrows(InferException::class, 'image path is not a regular file but a directory: /tmp', fn () => Image::fromFile('/tmp'));
        $this->assertThrows(InferException::class, 'image path is not a regular file but a character device: /dev/null', fn () => Image::fromFile('/dev/null'));
        $this->assertThrows(InferException::class, 'image path contains a NUL byte', fn () => Image::fromFile("/tmp/a\0b.png"));
        $notImage = $this->tempFile('plain text', '.png');
        $this->assertThrows(
            InferException::class,
            "$notImage: the bytes are not an image in a known format",
            fn () => Image::fromFile($notImage),
        );
    }

    /** PHP code for a child process: $peak() reads its peak RSS (VmHWM) in kB. */
    private const PEAK = <<<'PHP'
        $peak = fn () => preg_match('/^VmHWM:\s+(\d+) kB/m', (string) file_get_contents('/proc/self/status'), $m) ? (int) $m[1] : -1;
        PHP;

    /**
     * A strip of 16,777,216 × 1 pixels passes infer.max_image_pixels (16777216) but not the side limit, from its
     * header: a projector's resizing of such a strip took a gigabyte.
     */
    public function testALongSideIsRefusedBeforeDecoding(): void
    {
        $this->assertThrows(
            InferException::class,
            'the image declares 16777216 x 1 pixels, a side longer than infer.max_image_side (16384); nothing was decoded',
            fn () => Image::fromBytes(png_claiming(16777216, 1)),
        );
        $this->assertThrows(
            InferException::class,
            'the image declares 1 x 20000 pixels, a side longer than infer.max_image_side (16384); nothing was decoded',
            fn () => Image::fromPixels(1, 20000, str_repeat("\x00", 60000)),
        );
        $this->assertSame(16384, Image::fromPixels(16384, 1, str_repeat("\x00", 16384 * 3))->width());
    }

    public function testTheSideLimitIsPhpIniMaxImageSide(): void
    {
        $code = <<<'PHP'
            foreach ([[100, 1], [1, 101]] as [$w, $h]) {
                try { echo Displace\Infer\Image::fromPixels($w, $h, str_repeat("\x01", $w * $h * 3))->width(), " ok\n"; } catch (\Throwable $e) { echo get_class($e), ': ', $e->getMessage(), "\n"; }
            }
            echo ini_get('infer.max_image_side'), "\n";
            var_dump(ini_set('infer.max_image_side', '999999'));
            PHP;
        $this->assertSame(
            "100 ok\n"
            . "Displace\\Infer\\InferException: the image declares 1 x 101 pixels, a side longer than infer.max_image_side (100); nothing was decoded\n"
            . "100\nbool(false)\n",
            $this->phpOutput(['infer.max_image_side' => '100'], $code),
        );
    }

    /**
     * A 3 MB PNG of one pixel whose ICC profile (iCCP, compressed) inflates to 500 MB: the profile is read under the
     * decoder's byte limit for what is not pixels (8 MiB), dropped when it passes it, and the pixel decodes. The peak
     * RSS of the process that decodes it stays far from 500 MB (it reached 523 MB when the size was probed with the
     * image crate's default limit).
     */
    public function testACompressedIccProfileCannotInflateTheDecoder(): void
    {
        $bomb = png_with_iccp(png(1, 1, "\x10\x20\x30"), zlib_zeros(254000));
        $this->assertLessThan(4 << 20, strlen($bomb));
        $code = self::PEAK . <<<'PHP'
            $file = (string) file_get_contents($argv[1]);
            $before = $peak();
            try { $i = Displace\Infer\Image::fromBytes($file); echo $i->width(), 'x', $i->height(), ' ', $i->sha256(), ' '; } catch (\Throwable $e) { echo get_class($e), ': ', $e->getMessage(), ' '; }
            echo $before, ' ', $peak();
            PHP;
        $out = $this->phpOutput([], $code, [$this->tempFile($bomb, '.png')]);
        $this->assertMatchesRegularExpression('/^1x1 ' . pixels_sha256(1, 1, "\x10\x20\x30") . ' \d+ \d+$/', $out, 'the pixel decodes: ' . $out);
        [$before, $after] = array_map('intval', array_slice(explode(' ', $out), -2));
        $this->assertGreaterThan(0, $before);
        $this->assertLessThan(24 * 1024, $after - $before, "peak RSS went from $before to $after kB");
        // An ordinary profile is no obstacle either, and what is decoded is the pixel.
        $small = Image::fromBytes(png_with_iccp(png(1, 1, "\x10\x20\x30"), zlib_zeros(2)));
        $this->assertSame(pixels_sha256(1, 1, "\x10\x20\x30"), $small->sha256());
    }

    /**
     * Decoded pixels live outside PHP's heap, but count against memory_limit: twenty 2048 × 2048 images (12 MiB of
     * pixels each) kept by a script under memory_limit=64M are refused once what PHP uses, what the images hold and
     * what the next one asks would pass it, with the numbers in the message; the process's peak RSS stays near the
     * limit (240 MB and more when the pixels were not counted).
     */
    public function testDecodedPixelsCountAgainstMemoryLimit(): void
    {
        $file = $this->tempFile(png(2048, 2048, solid(2048, 2048, 200, 10, 10)), '.png');
        $code = self::PEAK . <<<'PHP'
            $bytes = (string) file_get_contents($argv[1]);
            $before = $peak();
            $kept = [];
            try { for ($i = 0; $i < 20; $i++) { $kept[] = Displace\Infer\Image::fromBytes($bytes); } echo "all 20 decoded\n"; } catch (\Throwable $e) { echo get_class($e), ': ', $e->getMessage(), "\n"; }
            echo count($kept), ' ', $before, ' ', $peak(), "\n";
            $kept = [];
            echo Displace\Infer\Image::fromBytes($bytes)->width(), "\n";
            PHP;
        $out = $this->phpOutput(['memory_limit' => '64M'], $code, [$file]);
        [$message, $numbers, $again] = explode("\n", trim($out));
        $this->assertMatchesRegularExpression(
            '/^Displace\\\\Infer\\\\InferException: decoding a 2048 x 2048 image needs 20971520 bytes outside PHP\'s heap, more than memory_limit \(67108864 bytes\) leaves: PHP uses \d+ bytes and images hold \d+, so \d+ are left$/',
            $message,
        );
        [$count, $before, $after] = array_map('intval', explode(' ', $numbers));
        $this->assertGreaterThanOrEqual(1, $count, $out);
        $this->assertLessThan(20, $count, $out);
        $this->assertLessThan(96 * 1024, $after - $before, "peak RSS went from $before to $after kB with $count images kept");
        // Images given up give their bytes back.
        $this->assertSame('2048', $again);
    }

    /** Raw pixels and the bytes of a file being read are counted the same way. */
    public function testPixelsAndFilesCountAgainstMemoryLimit(): void
    {
        $bigFile = $this->tempFile(png(1, 1, "\x00\x00\x00") . str_repeat("\x00", 24 << 20), '.png');
        $code = <<<'PHP'
            try { Displace\Infer\Image::fromPixels(2048, 2048, str_repeat("\x01", 2048 * 2048 * 3)); echo "decoded\n"; } catch (\Throwable $e) { echo get_class($e), ': ', $e->getMessage(), "\n"; }
            try { Displace\Infer\Image::fromFile($argv[1]); echo "read\n"; } catch (\Throwable $e) { echo get_class($e), ': ', $e->getMessage(), "\n"; }
            PHP;
        $lines = explode("\n", trim($this->phpOutput(['memory_limit' => '24M'], $code, [$bigFile])));
        $this->assertMatchesRegularExpression(
            '/^Displace\\\\Infer\\\\InferException: a 2048 x 2048 image needs 12582912 bytes outside PHP\'s heap, more than memory_limit \(25165824 bytes\) leaves: PHP uses \d+ bytes and images hold 0, so \d+ are left$/',
            $lines[0],
        );
        $this->assertMatchesRegularExpression(
            '/^Displace\\\\Infer\\\\InferException: reading the image file ' . preg_quote($bigFile, '/') . ' needs ' . filesize($bigFile) . ' bytes outside PHP\'s heap, more than memory_limit \(25165824 bytes\) leaves: PHP uses \d+ bytes and images hold 0, so \d+ are left$/',
            $lines[1],
        );
    }

    /**
     * A FIFO is refused at once, not opened for a writer that never comes (the child has 20 seconds, so that a
     * regression fails instead of hanging the suite).
     */
    public function testFromFileRefusesAFifoAtOnce(): void
    {
        $fifo = sys_get_temp_dir() . '/infer-fifo-' . getmypid() . '.png';
        @unlink($fifo);
        if (function_exists('posix_mkfifo')) {
            $this->assertTrue(posix_mkfifo($fifo, 0600));
        } else {
            exec('mkfifo ' . escapeshellarg($fifo), $_, $rc);
            $this->assertSame(0, $rc, 'mkfifo');
        }
        $code = '$t = microtime(true); try { Displace\Infer\Image::fromFile($argv[1]); echo "read\n"; } catch (\Throwable $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; } echo round(microtime(true) - $t), "\n";';
        $cmd = ['timeout', '20', PHP_BINARY, '-n', '-d', 'extension=' . DefaultModel::extension(), '-r', $code, $fifo];
        try {
            $this->assertSame(
                "Displace\\Infer\\InferException: image path is not a regular file but a FIFO: $fifo\n0\n",
                $this->commandOutput($cmd),
            );
        } finally {
            @unlink($fifo);
        }
    }

    public function testFromFileObeysOpenBasedir(): void
    {
        $inside = sys_get_temp_dir() . '/infer-img-basedir-' . getmypid();
        @mkdir($inside);
        $outside = $this->tempFile(png(2, 2, solid(2, 2, 1, 2, 3)), '.png');
        $allowed = $inside . '/ok.png';
        file_put_contents($allowed, png(2, 2, solid(2, 2, 1, 2, 3)));
        try {
            $code = 'foreach ([$argv[1], $argv[2]] as $p) { try { echo Displace\Infer\Image::fromFile($p)->width(), "\n"; } catch (\Throwable $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; } }';
            $out = $this->phpOutput(['open_basedir' => $inside], $code, [$allowed, $outside]);
            $this->assertSame(
                "2\nDisplace\\Infer\\InferException: open_basedir restriction in effect. File($outside) is not within the allowed path(s): ($inside)\n",
                $out,
            );
        } finally {
            @unlink($allowed);
            @rmdir($inside);
        }
    }

    public function testImagesAreMadeByFactoriesOnlyAndNeverSerialized(): void
    {
        $this->assertThrows(
            InferException::class,
            'Displace\\Infer\\Image cannot be created with new; use Image::fromFile(), Image::fromBytes() or Image::fromPixels() instead.',
            fn () => new Image(),
        );
        $image = Image::fromPixels(1, 1, "\x00\x00\x00");
        $this->assertThrows(\Exception::class, "Serialization of 'Displace\\Infer\\Image' is not allowed", fn () => serialize($image));
    }

    public function testAUserMessageKeepsItsTextAndImagesInOrder(): void
    {
        $red = Image::fromPixels(1, 1, "\xff\x00\x00");
        $blue = Image::fromPixels(1, 1, "\x00\x00\xff");
        $prompt = Prompt::system('Be brief.')->withUser(['Compare ', $red, ' with ', $blue, '.']);
        $message = $prompt->messages()[1];
        $this->assertInstanceOf(Message::class, $message);
        $this->assertSame('Compare  with .', $message->content());
        $parts = $message->parts();
        $this->assertCount(5, $parts);
        $this->assertSame(['Compare ', ' with ', '.'], [$parts[0], $parts[2], $parts[4]]);
        $this->assertSame([$red->sha256(), $blue->sha256()], [$parts[1]->sha256(), $parts[3]->sha256()]);
        $this->assertSame([$red->sha256(), $blue->sha256()], array_map(fn ($i) => $i->sha256(), $message->images()));
        // A string is one part and no image, as before.
        $this->assertSame(['Be brief.'], $prompt->messages()[0]->parts());
        $this->assertSame([], $prompt->messages()[0]->images());
        $this->assertSame([$red->sha256()], array_map(fn ($i) => $i->sha256(), Prompt::user([$red])->messages()[0]->images()));
    }

    public function testMessageContentOfTheWrongKindIsRefused(): void
    {
        $this->assertThrows(
            \TypeError::class,
            'message content must be a string or a list of strings and Displace\\Infer\\Image objects, got int 42',
            fn () => Prompt::user(42),
        );
        $this->assertThrows(
            \TypeError::class,
            'message content[1] must be a string or a Displace\\Infer\\Image, got an object of class stdClass',
            fn () => Prompt::user(['a', new \stdClass()]),
        );
        $this->assertThrows(
            \TypeError::class,
            'message content must be a list (keys 0, 1, 2, … in order), but entry 0 has the key "text"',
            fn () => Prompt::system('x')->withUser(['text' => 'hi']),
        );
        $this->assertThrows(
            InferException::class,
            'message content[0] is not valid UTF-8 (invalid byte at offset 1)',
            fn () => Prompt::user(["a\xff"]),
        );
    }
}
