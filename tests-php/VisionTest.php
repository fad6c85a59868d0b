<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Image;
use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\ModelLoadException;
use Displace\Infer\Prompt;
use Displace\Infer\Schema;
use Displace\Infer\Tests\Support\LlamaServer;

use function Displace\Infer\Tests\Support\png;
use function Displace\Infer\Tests\Support\solid;

/**
 * Images in, through the colour projector `make vision-model` makes for
 * SmolLM2 (scripts/make-colour-mmproj.py): a red, green or blue patch becomes
 * the model's own embedding of " red", " green" or " blue", so the image's
 * content decides the answer. The judge of the in-process answers is
 * llama.cpp's own llama-mtmd-cli, built from the same llama.cpp with the same
 * projector, image and prompt (scripts/build-llama-mtmd-cli.sh).
 *
 * @group second-model
 */
final class VisionTest extends InferTestCase
{
    private const QUESTION = 'What colour is this image? Answer with one word.';
    private const ORDER = 'Which colours are in the image, in order? Answer with the colour words only.';

    private static ?Model $vision = null;

    private static function projectorPath(): string
    {
        $path = getenv('INFER_VISION_MODEL') ?: dirname(__DIR__) . '/models/SmolLM2-135M-colour-mmproj.gguf';
        if (!is_file($path)) {
            self::fail("the colour projector is not at $path: run `make vision-model` or set INFER_VISION_MODEL");
        }
        return $path;
    }

    private static function vision(): Model
    {
        return self::$vision ??= Model::load(self::modelPath(), ['mmproj' => self::projectorPath()]);
    }

    private const COLOURS = ['r' => [255, 0, 0], 'g' => [0, 255, 0], 'b' => [0, 0, 255]];

    private static function solidImage(string $c, int $w = 28, int $h = 28): Image
    {
        return Image::fromPixels($w, $h, solid($w, $h, ...self::COLOURS[$c]));
    }

    /** A 28 × 28 image of four 14-pixel quadrants, $pattern naming them row by row ('rgbr': red, green / blue, red). */
    private static function quadrants(string $pattern): Image
    {
        $rgb = '';
        for ($y = 0; $y < 28; $y++) {
            for ($x = 0; $x < 28; $x++) {
                $c = $pattern[intdiv($y, 14) * 2 + intdiv($x, 14)];
                $rgb .= pack('C3', ...self::COLOURS[$c]);
            }
        }
        return Image::fromPixels(28, 28, $rgb);
    }

    /**
     * llama-mtmd-cli's greedy answer to $question about the images $pngs (their bytes; a question without
     * llama.cpp's marker gets the image before it, as the CLI puts it).
     *
     * @param string|list<string> $pngs
     */
    private function mtmdCli(string|array $pngs, string $question, int $n): string
    {
        $binary = getenv('INFER_LLAMA_MTMD_CLI') ?: dirname(__DIR__) . '/target/llama-server/bin/llama-mtmd-cli';
        if (!is_executable($binary)) {
            $this->fail("llama-mtmd-cli not found at $binary: run `make llama-mtmd-cli`");
        }
        $cmd = [$binary, '-m', self::modelPath(), '--mmproj', self::projectorPath()];
        foreach ((array) $pngs as $png) {
            array_push($cmd, '--image', $this->tempFile($png, '.png'));
        }
        array_push($cmd, '-p', $question, '--temp', '0', '-n', (string) $n, '-fa', 'off', '-t', '2', '--jinja', '--no-warmup');
        return trim($this->commandOutput($cmd));
    }

    /**
     * The greedy answer to $question about $image, the prompt evaluated whole (no cached prefix): as llama-mtmd-cli
     * evaluates it. (A prefix restored from the cache and the rest evaluated after it give logits that differ in
     * the last bits, which can turn a near tie of this small model the other way.)
     */
    private function ask(Image $image, string $question = self::QUESTION, int $n = 16): string
    {
        return self::vision()->chat(Prompt::user([$image, $question]), $n, temperature: 0.0, options: self::WHOLE)->text();
    }

    /** The options of a call whose prompt is evaluated whole. */
    private const WHOLE = ['cache_prompt' => false];

    /** @return iterable<string, array{string, string}> */
    public static function colours(): iterable
    {
        yield 'red' => ['r', 'red'];
        yield 'green' => ['g', 'green'];
        yield 'blue' => ['b', 'blue'];
    }

    /** @dataProvider colours */
    public function testEachColourIsNamedAsLlamaCppsOwnCliNamesIt(string $c, string $word): void
    {
        $image = self::solidImage($c);
        $text = $this->ask($image);
        $this->assertStringContainsString($word, strtolower($text));
        foreach (array_diff(['red', 'green', 'blue'], [$word]) as $other) {
            $this->assertStringNotContainsString($other, strtolower($text));
        }
        $this->assertSame($this->mtmdCli(png(28, 28, solid(28, 28, ...self::COLOURS[$c])), self::QUESTION, 16), trim($text));
    }

    public function testALargeImageIsScaledByTheProjector(): void
    {
        $text = $this->ask(self::solidImage('r', 1000, 600));
        $this->assertStringContainsString('red', strtolower($text));
        $this->assertSame($this->mtmdCli(png(1000, 600, solid(1000, 600, 255, 0, 0)), self::QUESTION, 16), trim($text));
    }

    /** @return iterable<string, array{string}> */
    public static function patterns(): iterable
    {
        foreach (['rgbr', 'gbrg', 'bgrb', 'rbgr'] as $p) {
            yield $p => [$p];
        }
    }

    /** @dataProvider patterns */
    public function testQuadrantsAreNamedInTheirOrder(string $pattern): void
    {
        $names = ['r' => 'red', 'g' => 'green', 'b' => 'blue'];
        $text = $this->ask(self::quadrants($pattern), self::ORDER, 24);
        preg_match_all('/\b(red|green|blue)\b/', strtolower($text), $m);
        $this->assertSame(array_map(fn ($c) => $names[$c], str_split($pattern)), $m[1], $text);
    }

    /**
     * Two images in one message, each in its place: the text is llama-mtmd-cli's for the same two images at the
     * same two markers, and names the colours in the images' order.
     */
    public function testTwoImagesInOneMessageAreReadInOrder(): void
    {
        $names = ['r' => 'red', 'g' => 'green', 'b' => 'blue'];
        foreach ([['r', 'g'], ['g', 'r']] as [$a, $b]) {
            $text = self::vision()->chat(
                Prompt::user(['First image: ', self::solidImage($a), "\nSecond image: ", self::solidImage($b), "\n" . self::ORDER]),
                24,
                temperature: 0.0,
                options: self::WHOLE,
            )->text();
            $pngs = [png(28, 28, solid(28, 28, ...self::COLOURS[$a])), png(28, 28, solid(28, 28, ...self::COLOURS[$b]))];
            $this->assertSame(
                $this->mtmdCli($pngs, "First image: <__media__>\nSecond image: <__media__>\n" . self::ORDER, 24),
                trim($text),
            );
            preg_match_all('/\b(red|green|blue)\b/', strtolower($text), $m);
            $this->assertSame([$names[$a], $names[$b]], $m[1], $text);
        }
    }

    /** @dataProvider colours */
    public function testASchemaReplyIsValidAndRight(string $c, string $word): void
    {
        $schema = Schema::object(['colour' => Schema::enum(['red', 'green', 'blue'])]);
        $out = self::vision()->chat(
            Prompt::user([self::solidImage($c), 'Give the colour of this image as JSON.']),
            32,
            temperature: 0.0,
            options: ['schema' => $schema],
        );
        $this->assertSame(['colour' => $word], $out->json(), $out->text());
    }

    public function testStreamGivesWhatChatGives(): void
    {
        $prompt = Prompt::user([self::solidImage('g'), self::QUESTION]);
        $chat = self::vision()->chat($prompt, 16, temperature: 0.0);
        $stream = self::vision()->stream($prompt, 16, temperature: 0.0);
        $text = '';
        foreach ($stream as $piece) {
            $text .= $piece;
        }
        $this->assertSame($chat->text(), $text);
        $this->assertSame($chat->promptTokens(), $stream->response()->promptTokens());
    }

    public function testChatManyGivesEachPromptItsOwnImages(): void
    {
        $prompts = [
            Prompt::user([self::solidImage('r'), self::QUESTION]),
            Prompt::user(['Say hello.']),
            Prompt::user([self::solidImage('b'), self::QUESTION]),
            Prompt::user([self::quadrants('rgbr'), self::ORDER]),
        ];
        $many = self::vision()->chatMany($prompts, 24, temperature: 0.0, options: ['cache_prompt' => false]);
        foreach ($prompts as $i => $prompt) {
            $one = self::vision()->chat($prompt, 24, temperature: 0.0, options: ['cache_prompt' => false]);
            $this->assertSame($one->text(), $many[$i]->text(), "prompt $i");
            $this->assertSame($one->promptTokens(), $many[$i]->promptTokens(), "prompt $i");
        }
    }

    public function testPromptTokensCountTheImagesTokens(): void
    {
        $text = self::vision()->chat(Prompt::user(['x', self::QUESTION]), 1, temperature: 0.0);
        $image = self::vision()->chat(Prompt::user([self::solidImage('r'), self::QUESTION]), 1, temperature: 0.0);
        $two = self::vision()->chat(Prompt::user([self::solidImage('r'), self::solidImage('g'), self::QUESTION]), 1, temperature: 0.0);
        // The colour projector makes 4 tokens of a 28 × 28 image; "x" is one token.
        $this->assertSame(4 - 1, $image->promptTokens() - $text->promptTokens());
        $this->assertSame(4, $two->promptTokens() - $image->promptTokens());
    }

    public function testTheSameImageIsReadFromTheCacheAndAnotherIsNot(): void
    {
        $model = Model::load(self::modelPath(), ['mmproj' => self::projectorPath()]);
        $red = self::solidImage('r');
        $first = $model->chat(Prompt::user([$red, self::QUESTION]), 12, temperature: 0.0);
        $this->assertSame(0, $first->cachedTokens());
        // The same pixels from a file: the same image, the whole prompt cached (with its logits).
        $again = $model->chat(Prompt::user([Image::fromBytes(png(28, 28, solid(28, 28, 255, 0, 0))), self::QUESTION]), 12, temperature: 0.0);
        $this->assertSame($first->promptTokens(), $again->cachedTokens());
        $this->assertSame($first->text(), $again->text());
        // Another question about it: the template's opening and the image are reused.
        $other = $model->chat(Prompt::user([$red, 'Name the colour of this image.']), 12, temperature: 0.0);
        $this->assertGreaterThan(4, $other->cachedTokens());
        // Another image: nothing after the template's opening matches.
        $blue = $model->chat(Prompt::user([self::solidImage('b'), self::QUESTION]), 12, temperature: 0.0);
        $this->assertLessThan($first->promptTokens() - 8, $blue->cachedTokens());
        $this->assertStringContainsString('blue', strtolower($blue->text()));
        // An image one pixel apart is another image too.
        $rgb = solid(28, 28, 255, 0, 0);
        $rgb[0] = "\xfe";
        $near = $model->chat(Prompt::user([Image::fromPixels(28, 28, $rgb), self::QUESTION]), 12, temperature: 0.0);
        $this->assertSame($blue->cachedTokens(), $near->cachedTokens());
    }

    /**
     * `<__media__>` typed by a user is text: a prompt holding it is as many tokens as its text, and beside a real
     * image only the image takes the image's 4 tokens.
     */
    public function testTheMediaMarkerTypedByAUserIsText(): void
    {
        $model = self::vision();
        $typed = Prompt::user('<__media__> ' . self::QUESTION);
        $this->assertSame($model->countTokens($model->renderPrompt($typed)), $model->chat($typed, 1)->promptTokens());
        $this->assertGreaterThan(3, $model->countTokens('<__media__>'));
        $both = Prompt::user(['<__media__>', self::solidImage('r'), ' ' . self::QUESTION]);
        // The rendering writes the image as the marker too: the second one is the image.
        $rendered = $model->renderPrompt($both);
        $first = strpos($rendered, '<__media__>');
        $second = strpos($rendered, '<__media__>', $first + 1);
        $this->assertNotFalse($second);
        $expected = $model->countTokens(substr($rendered, 0, $second)) + 4
            + $model->countTokens(substr($rendered, $second + strlen('<__media__>')));
        $this->assertSame($expected, $model->chat($both, 1)->promptTokens());
    }

    public function testAnImageForAModelWithoutAProjectorIsRefused(): void
    {
        $this->assertThrows(
            InferenceException::class,
            "the prompt has an image, but the model was loaded without an image projector: load it with Model::load(\$path, ['mmproj' => \$projectorPath])",
            fn () => self::model()->chat(Prompt::user([self::solidImage('r'), self::QUESTION]), 4),
        );
        // The model answers the next call as before.
        $this->assertNotSame('', self::model()->chat(Prompt::user('Say hi.'), 4)->text());
        $this->assertFalse(self::model()->info()['vision']);
        $this->assertNull(self::model()->info()['mmproj']);
        $this->assertTrue(self::vision()->info()['vision']);
        $this->assertSame(self::projectorPath(), self::vision()->info()['mmproj']);
    }

    public function testAProjectorThatIsNotOneIsRefused(): void
    {
        $notGguf = $this->tempFile('not a projector at all', '.gguf');
        $this->assertThrows(ModelLoadException::class, "not a GGUF file", fn () => Model::load(self::modelPath(), ['mmproj' => $notGguf]));
        // A GGUF that is a language model, not a projector.
        $this->assertThrows(
            ModelLoadException::class,
            'the image projector ' . self::modelPath() . ' could not be used with this model:',
            fn () => Model::load(self::modelPath(), ['mmproj' => self::modelPath()]),
        );
        $this->assertThrows(ModelLoadException::class, 'model file not found', fn () => Model::load(self::modelPath(), ['mmproj' => '/nonexistent/mmproj.gguf']));
        $this->assertThrows(
            ModelLoadException::class,
            'option "mmproj" applies to generating models',
            fn () => Model::load(self::modelPath(), ['mmproj' => self::projectorPath(), 'embedding' => true]),
        );
        $this->assertThrows(ModelLoadException::class, 'option "mmproj" must be the path of an image projector GGUF', fn () => Model::load(self::modelPath(), ['mmproj' => 42]));
    }

    public function testAProjectorMadeForAnotherModelIsRefused(): void
    {
        // Qwen2.5-Coder-0.5B's input width is 896; the colour projector writes 576.
        $qwen = getenv('INFER_QWEN_MODEL') ?: dirname(__DIR__) . '/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf';
        $e = $this->assertThrows(
            ModelLoadException::class,
            'the image projector ' . self::projectorPath() . ' could not be used with this model:',
            fn () => Model::load($qwen, ['mmproj' => self::projectorPath()]),
        );
        $this->assertMatchesRegularExpression('/576|896|embd|dimension/i', $e->getMessage());
    }

    public function testMoreImageTokensThanTheContextIsRefusedAndTheModelGoesOn(): void
    {
        $images = array_fill(0, 40, self::solidImage('r'));
        $this->assertThrows(
            InferenceException::class,
            'which does not fit in nCtx = 128',
            fn () => self::vision()->chat(Prompt::user([...$images, self::QUESTION]), 4, 128),
        );
        $this->assertStringContainsString('red', strtolower($this->ask(self::solidImage('r'))));
    }

    public function testProjectorPathsObeyOpenBasedir(): void
    {
        $dir = dirname(self::modelPath());
        $code = 'try { Displace\Infer\Model::load($argv[1], ["mmproj" => $argv[2]]); echo "loaded\n"; } catch (\Throwable $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; }';
        $outside = $this->tempFile('x', '.gguf');
        $out = $this->phpOutput(['open_basedir' => $dir], $code, [self::modelPath(), $outside]);
        $this->assertSame(
            "Displace\\Infer\\ModelLoadException: open_basedir restriction in effect. File($outside) is not within the allowed path(s): ($dir)\n",
            $out,
        );
    }

    /**
     * Model::connect() to llama-server started with the same projector (built from the same llama.cpp): the same
     * greedy text as in this process, each image sent as PNG in its place.
     */
    public function testAConnectedLlamaServerWithTheProjectorAnswersAsInProcess(): void
    {
        $server = new LlamaServer(self::modelPath(), ['-c', '2048', '-np', '1', '--mmproj', self::projectorPath()]);
        try {
            $remote = Model::connect($server->url);
            $this->assertTrue($remote->info()['vision']);
            // A fresh model here and a fresh server with one slot, given the same calls in the same order, reuse
            // the same prefixes of each prompt (see ask()).
            $local = Model::load(self::modelPath(), ['mmproj' => self::projectorPath()]);
            foreach (['r', 'g', 'b'] as $c) {
                $prompt = Prompt::user([self::solidImage($c), self::QUESTION]);
                $this->assertSame(
                    $local->chat($prompt, 16, temperature: 0.0)->text(),
                    $remote->chat($prompt, 16, temperature: 0.0)->text(),
                );
            }
            $two = Prompt::user(['First image: ', self::solidImage('r'), "\nSecond image: ", self::solidImage('g'), "\n" . self::ORDER]);
            $this->assertSame($local->chat($two, 24)->text(), $remote->chat($two, 24)->text());
            $schema = ['schema' => Schema::object(['colour' => Schema::enum(['red', 'green', 'blue'])])];
            $json = Prompt::user([self::solidImage('g'), 'Give the colour of this image as JSON.']);
            $this->assertSame(['colour' => 'green'], $remote->chat($json, 32, options: $schema)->json());
            // llama.cpp's default marker typed by a user is text there too (the server marks images with a
            // marker of its own, drawn at random when it starts).
            $typed = Prompt::user(['<__media__>', self::solidImage('r'), ' ' . self::QUESTION]);
            $this->assertSame($local->chat($typed, 16)->text(), $remote->chat($typed, 16)->text());
            // Markup llama-server would read as control tokens is refused, not sent.
            $this->assertThrows(
                InferenceException::class,
                'so text holding control-token markup cannot be sent with images',
                fn () => $remote->chat(Prompt::user(['<|im_end|>', self::solidImage('r'), self::QUESTION]), 4),
            );
            // The connection goes on.
            $this->assertStringContainsString('blue', $remote->chat(Prompt::user([self::solidImage('b'), self::QUESTION]), 16)->text());
        } finally {
            $server->stop();
        }
    }

    public function testAServerWithoutAProjectorSaysSo(): void
    {
        $server = new LlamaServer(self::modelPath(), ['-c', '2048', '-np', '1']);
        try {
            $remote = Model::connect($server->url);
            $this->assertFalse($remote->info()['vision']);
            $this->assertThrows(
                InferenceException::class,
                "{$server->url} has no image projector: start llama-server with --mmproj (the shared server: infer.server_mmproj)",
                fn () => $remote->chat(Prompt::user([self::solidImage('r'), self::QUESTION]), 4),
            );
        } finally {
            $server->stop();
        }
    }

    /**
     * 200 calls with images: the process's memory is steady (what the first
     * calls allocate is reused, nothing grows per call).
     *
     * @group slow
     */
    public function testTwoHundredCallsWithImagesLeakNothing(): void
    {
        $model = self::vision();
        $rss = function (): int {
            preg_match('/^VmRSS:\s+(\d+) kB/m', (string) file_get_contents('/proc/self/status'), $m);
            return (int) $m[1] * 1024;
        };
        for ($i = 0; $i < 20; $i++) {
            $model->chat(Prompt::user([self::solidImage('rgb'[$i % 3]), self::QUESTION]), 2, temperature: 0.0);
        }
        $before = $rss();
        for ($i = 0; $i < 200; $i++) {
            $rgb = solid(28, 28, $i, 255 - $i, 0);
            $model->chat(Prompt::user([Image::fromPixels(28, 28, $rgb), self::QUESTION]), 2, temperature: 0.0);
        }
        $this->assertLessThan(8 << 20, $rss() - $before, 'RSS grew by more than 8 MiB over 200 calls');
    }
}
