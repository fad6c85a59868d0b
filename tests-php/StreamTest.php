<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\InferenceException;
use Displace\Infer\Model;
use Displace\Infer\Prompt;
use Displace\Infer\Stream;
use Displace\Infer\Tests\Support\BuiltInServer;
use Displace\Infer\Tests\Support\Fpm;

use function Displace\Infer\Tests\Support\fcgi_next;
use function Displace\Infer\Tests\Support\fcgi_send;

use const Displace\Infer\Tests\Support\FCGI_STDOUT;

require_once __DIR__ . '/support/BuiltInServer.php';
require_once __DIR__ . '/support/Fpm.php';

/**
 * Model::stream() and rawStream(): the pieces, put together, are the text of
 * the final response, byte for byte, and that text is what chat() / raw()
 * return for the same arguments; a stream can be cancelled, and leaves the
 * model usable with a cache that holds what it says; while a stream is open
 * the model refuses other calls. Under PHP-FPM the pieces reach the client
 * as they are generated, and a client that goes away or a time limit ends
 * the script without harming the worker.
 */
final class StreamTest extends InferTestCase
{
    private const QUESTION = 'Tell me about Paris in two sentences.';

    private ?Fpm $fpm = null;

    protected function tearDown(): void
    {
        $this->fpm?->stop();
        parent::tearDown();
    }

    /** @return list<array{string, string}> the [key, piece] pairs of a whole iteration */
    private static function collect(Stream $stream): array
    {
        $pieces = [];
        foreach ($stream as $key => $piece) {
            $pieces[] = [$key, $piece];
        }
        return $pieces;
    }

    /** @param list<array{string, string}> $pieces */
    private static function joined(array $pieces, ?string $key = null): string
    {
        return implode('', array_map(
            static fn (array $p): string => $key === null || $p[0] === $key ? $p[1] : '',
            $pieces,
        ));
    }

    private static function fresh(): Model
    {
        return Model::load(self::modelPath());
    }

    /**
     * @param array<string, mixed> $options
     */
    private function assertStreamIsChat(Prompt $prompt, int $maxTokens, float $temperature, array $options): Stream
    {
        $stream = self::fresh()->stream($prompt, maxTokens: $maxTokens, temperature: $temperature, options: $options);
        $pieces = self::collect($stream);
        $response = $stream->response();
        $this->assertSame($response->text(), self::joined($pieces), 'the pieces put together');
        foreach ($pieces as [$key, $piece]) {
            $this->assertTrue(mb_check_encoding($piece, 'UTF-8'), 'piece is valid UTF-8: ' . bin2hex($piece));
            $this->assertNotSame('', $piece, 'no empty piece');
        }
        $chat = self::fresh()->chat($prompt, maxTokens: $maxTokens, temperature: $temperature, options: $options);
        $this->assertSame($chat->text(), $response->text(), 'chat() with the same arguments');
        $this->assertSame($chat->finishReason(), $response->finishReason());
        $this->assertSame($chat->tokensGenerated(), $response->tokensGenerated());
        $this->assertSame($chat->promptTokens(), $response->promptTokens());
        return $stream;
    }

    public function testGreedyPiecesJoinToTheTextThatChatReturns(): void
    {
        $stream = $this->assertStreamIsChat(Prompt::user(self::QUESTION), 32, 0.0, []);
        $this->assertSame('length', $stream->finishReason());
        $this->assertGreaterThan(10, iterator_count(self::fresh()->stream(Prompt::user(self::QUESTION), maxTokens: 32)), 'one piece per token or so');
    }

    /** @group engine */
    public function testSampledPiecesJoinToTheTextThatChatReturns(): void
    {
        $this->assertStreamIsChat(Prompt::user('Write a short poem about rain.'), 40, 0.9, ['top_p' => 0.9, 'repeat_penalty' => 1.1]);
    }

    /** @group engine */
    public function testAConstrainedStreamYieldsWhatChatReturns(): void
    {
        $schema = [
            'type' => 'object',
            'properties' => ['city' => ['type' => 'string', 'maxLength' => 20], 'country' => ['type' => 'string', 'maxLength' => 20]],
            'required' => ['city', 'country'],
        ];
        $stream = $this->assertStreamIsChat(Prompt::user('Where is the Eiffel Tower? Answer in JSON.'), 64, 0.0, ['schema' => $schema]);
        $data = json_decode($stream->text(), true, flags: JSON_THROW_ON_ERROR);
        $this->assertSame(['city', 'country'], array_keys($data));
    }

    /** @group engine */
    public function testACharacterSplitAcrossTokensIsNeverYieldedHalf(): void
    {
        // The grammar allows only characters of 2 to 4 bytes, each of which
        // the tokenizer splits into several tokens.
        $chars = ['😀', '日本語', '€', 'ü'];
        $grammar = 'root ::= ("😀" | "日本語" | "€" | "ü")+';
        $stream = $this->assertStreamIsChat(Prompt::user('Say something with emoji.'), 24, 0.0, ['grammar' => $grammar]);
        $model = self::model();
        $split = array_filter(mb_str_split($stream->text()), static fn (string $c): bool => strlen($c) > 1 && $model->countTokens($c) > 1);
        $this->assertNotEmpty($split, 'the output has a character that takes several tokens: ' . $stream->text());
        $this->assertMatchesRegularExpression('/^(' . implode('|', $chars) . ')+$/u', $stream->text());

        // The same for a plain completion.
        $raw = self::fresh()->rawStream('Emoji: ', maxTokens: 24, options: ['grammar' => $grammar]);
        $pieces = self::collect($raw);
        $this->assertSame(self::fresh()->raw('Emoji: ', maxTokens: 24, options: ['grammar' => $grammar]), self::joined($pieces));
        foreach ($pieces as [, $piece]) {
            $this->assertTrue(mb_check_encoding($piece, 'UTF-8'), 'piece is valid UTF-8: ' . bin2hex($piece));
        }
    }

    /** @group engine */
    public function testAStopStringIsNeverYieldedNotEvenItsBeginning(): void
    {
        $prompt = Prompt::user(self::QUESTION);
        $free = self::fresh()->chat($prompt, maxTokens: 48)->text();
        // Three words from the middle: their first characters arrive tokens
        // before the stop string is complete.
        $words = explode(' ', $free);
        $this->assertGreaterThan(8, count($words), $free);
        $stop = implode(' ', array_slice($words, 4, 3));
        $this->assertGreaterThan(2, self::model()->countTokens($stop), $stop);
        $stream = $this->assertStreamIsChat($prompt, 48, 0.0, ['stop' => [$stop]]);
        $this->assertSame('stop', $stream->finishReason());
        $this->assertSame(substr($free, 0, (int) strpos($free, $stop)), $stream->text());
    }

    /** @group engine */
    public function testATailThatCannotBecomeAStopStringIsReleased(): void
    {
        $prompt = Prompt::user(self::QUESTION);
        $free = self::fresh()->chat($prompt, maxTokens: 48)->text();
        $words = explode(' ', $free);
        // The start of this stop string occurs, but the rest never follows.
        $stop = $words[4] . ' qqqq';
        $this->assertStringNotContainsString($stop, $free);
        $stream = $this->assertStreamIsChat($prompt, 48, 0.0, ['stop' => [$stop, 'zz' . $words[1]]]);
        $this->assertSame($free, $stream->text());
    }

    /** @group engine */
    public function testThinkBlocksArePiecesKeyedReasoningWithTheirTags(): void
    {
        // The grammar makes the model write a reasoning block, then answer.
        $grammar = 'root ::= "<think>" [a-z ]{5,40} "</think>" " " [A-Z] [a-z ]{5,40} "."';
        $stream = $this->assertStreamIsChat(Prompt::user('What is the capital of France?'), 60, 0.0, ['grammar' => $grammar]);
        $pieces = self::collect(self::fresh()->stream(Prompt::user('What is the capital of France?'), maxTokens: 60, options: ['grammar' => $grammar]));
        $text = $stream->text();
        $this->assertSame(1, preg_match('~^(<think>[a-z ]*</think>)(.*)$~s', $text, $m), $text);
        $this->assertSame($m[1], self::joined($pieces, 'reasoning'));
        $this->assertSame($m[2], self::joined($pieces, 'answer'));
        $keys = array_values(array_unique(array_column($pieces, 0)));
        $this->assertSame(['reasoning', 'answer'], $keys, 'reasoning first, then the answer');
        $response = $stream->response();
        $this->assertSame(trim(substr($m[1], 7, -8)), $response->reasoning());
        $this->assertSame(ltrim($m[2]), $response->answer());
    }

    public function testRawStreamPiecesAreKeyedTextAndJoinToWhatRawReturns(): void
    {
        $prompt = 'The three largest cities of Italy are';
        $stream = self::fresh()->rawStream($prompt, maxTokens: 32);
        $pieces = self::collect($stream);
        $this->assertSame(['text'], array_values(array_unique(array_column($pieces, 0))));
        $expected = self::fresh()->raw($prompt, maxTokens: 32);
        $this->assertSame($expected, self::joined($pieces));
        $this->assertSame($expected, $stream->text());
        $response = $stream->response();
        $this->assertSame($response->finishReason(), $stream->finishReason());
        $this->assertSame($expected, $response->text());
        $this->assertSame($expected, $response->answer(), 'a plain completion has no reasoning split');
        $this->assertNull($response->reasoning());
        $this->assertSame($response->finishReason() === 'length', $response->tokensGenerated() === 32);
        $bos = (self::gguf()['tokenizer.ggml.add_bos_token'] ?? false) ? 1 : 0;
        $this->assertSame(self::model()->countTokens($prompt) + $bos, $response->promptTokens(), 'the prompt, and BOS where the GGUF asks for it');
    }

    public function testCancelStopsAtOnceAndKeepsWhatWasGenerated(): void
    {
        $model = self::fresh();
        $prompt = Prompt::user(self::QUESTION);
        $stream = $model->stream($prompt, maxTokens: 48);
        $seen = '';
        $atCancel = null;
        foreach ($stream as $piece) {
            $seen .= $piece;
            if ($atCancel === null && strlen($seen) > 20) {
                $stream->cancel();
                $atCancel = $seen;
            }
        }
        $response = $stream->response();
        $this->assertSame('cancelled', $response->finishReason());
        $this->assertSame($atCancel, $seen, 'nothing was generated after cancel()');
        $this->assertSame($seen, $response->text());
        // What was kept is what greedy decoding of as many tokens gives.
        $this->assertSame(self::fresh()->chat($prompt, maxTokens: $response->tokensGenerated())->text(), $response->text());
        $this->assertLessThan(48, $response->tokensGenerated());

        // The model is free, and its cache holds the prompt and the tokens
        // evaluated: the next call reuses the prompt and answers as a fresh
        // model does.
        $after = $model->chat($prompt, maxTokens: 48);
        $this->assertSame(self::fresh()->chat($prompt, maxTokens: 48)->text(), $after->text());
        $this->assertSame($after->promptTokens(), $after->cachedTokens(), 'the prompt was found whole in the cache');
        $stream->cancel();
        $this->assertSame('cancelled', $stream->finishReason(), 'cancel() again changes nothing');
    }

    /** @group engine */
    public function testAContinuationAfterACancelReusesWhatTheCacheReallyHolds(): void
    {
        $model = self::fresh();
        $prompt = 'A recipe for pancakes: first,';
        $stream = $model->rawStream($prompt, maxTokens: 64);
        $n = 0;
        foreach ($stream as $piece) {
            if (++$n === 10) {
                $stream->cancel();
            }
        }
        $continued = $prompt . $stream->text();
        $next = $model->rawStream($continued, maxTokens: 16);
        $text = $next->text();
        $this->assertSame(self::fresh()->raw($continued, maxTokens: 16), $text);
        $this->assertGreaterThan(self::model()->countTokens($prompt), $next->response()->cachedTokens(), 'the prompt and some generated tokens came from the cache');
    }

    public function testCancelBeforeIteratingEvaluatesNothing(): void
    {
        $model = self::fresh();
        $stream = $model->stream(Prompt::user(self::QUESTION), maxTokens: 16);
        $stream->cancel();
        $this->assertSame('cancelled', $stream->finishReason());
        $this->assertSame('', $stream->text());
        $this->assertSame(0, $stream->response()->tokensGenerated());
        $this->assertSame([], self::collect($stream));
        // Nothing was evaluated, so nothing is cached.
        $this->assertSame(0, $model->chat(Prompt::user(self::QUESTION), maxTokens: 4)->cachedTokens());
    }

    public function testBreakingOutAndLettingTheStreamGoFreesTheModel(): void
    {
        $model = self::fresh();
        $prompt = Prompt::user(self::QUESTION);
        foreach ($model->stream($prompt, maxTokens: 48) as $piece) {
            break;
        }
        $after = $model->chat($prompt, maxTokens: 12);
        $this->assertSame(self::fresh()->chat($prompt, maxTokens: 12)->text(), $after->text());
        $this->assertSame($after->promptTokens(), $after->cachedTokens(), 'the prompt was found whole in the cache');

        $held = $model->stream($prompt, maxTokens: 48);
        foreach ($held as $piece) {
            break;
        }
        $this->assertThrows(InferenceException::class, 'a stream is in progress on this model', fn () => $model->chat($prompt));
        unset($held);
        $this->assertSame($after->text(), $model->chat($prompt, maxTokens: 12)->text());
    }

    /** @return array<string, array{callable(Model): mixed}> */
    public static function otherCalls(): array
    {
        $prompt = Prompt::user('Hi');
        return [
            'chat' => [fn (Model $m) => $m->chat($prompt, maxTokens: 2)],
            'raw' => [fn (Model $m) => $m->raw('Hi', maxTokens: 2)],
            'stream' => [fn (Model $m) => $m->stream($prompt, maxTokens: 2)],
            'rawStream' => [fn (Model $m) => $m->rawStream('Hi', maxTokens: 2)],
            'chatMany' => [fn (Model $m) => $m->chatMany([$prompt], maxTokens: 2)],
            'rawMany' => [fn (Model $m) => $m->rawMany(['Hi'], maxTokens: 2)],
            'close' => [fn (Model $m) => $m->close()],
        ];
    }

    /** @dataProvider otherCalls */
    public function testAnotherCallWhileAStreamIsOpenThrowsUntilItEnds(callable $call): void
    {
        $ends = [
            'finished' => static fn (Stream $s) => iterator_to_array($s),
            'drained' => static fn (Stream $s) => $s->response(),
            'cancelled' => static fn (Stream $s) => $s->cancel(),
        ];
        foreach ($ends as $how => $end) {
            $model = self::fresh();
            $stream = $model->stream(Prompt::user(self::QUESTION), maxTokens: 4);
            $this->assertThrows(InferenceException::class, 'a stream is in progress on this model: iterate it to the end, cancel() it or let it go first', fn () => $call($model));
            $end($stream);
            // Free again: the same call goes through.
            $call($model);
        }
    }

    public function testASecondIterationThrows(): void
    {
        $stream = self::fresh()->stream(Prompt::user(self::QUESTION), maxTokens: 8);
        $first = self::collect($stream);
        $this->assertNotEmpty($first);
        $this->assertThrows(InferenceException::class, 'a Stream is iterated once', fn () => self::collect($stream));

        $broken = self::fresh()->stream(Prompt::user(self::QUESTION), maxTokens: 8);
        $n = 0;
        foreach ($broken as $piece) {
            if (++$n === 3) {
                break;
            }
        }
        $this->assertThrows(InferenceException::class, 'a Stream is iterated once', fn () => self::collect($broken));
    }

    public function testResponseBeforeTheEndGeneratesTheRestAndThePiecesStillCome(): void
    {
        $prompt = Prompt::user(self::QUESTION);
        $expected = self::fresh()->chat($prompt, maxTokens: 32)->text();

        $drained = self::fresh()->stream($prompt, maxTokens: 32);
        $this->assertSame($expected, $drained->response()->text());
        $this->assertSame($expected, self::joined(self::collect($drained)), 'a drained stream still yields its pieces once');

        $halfway = self::fresh()->stream($prompt, maxTokens: 32);
        $seen = '';
        foreach ($halfway as $piece) {
            $seen .= $piece;
            if (strlen($seen) > 10 && strlen($seen) < 20) {
                $this->assertSame($expected, $halfway->text(), 'text() in the middle of the loop');
            }
        }
        $this->assertSame($expected, $seen);
    }

    public function testCurrentAndKeyAreNullOutsideTheIteration(): void
    {
        $stream = self::fresh()->rawStream('Hello', maxTokens: 2);
        $this->assertFalse($stream->valid());
        $this->assertNull($stream->current());
        $this->assertNull($stream->key());
        self::collect($stream);
        $this->assertFalse($stream->valid());
        $this->assertNull($stream->current());
        $this->assertNull($stream->key());
    }

    public function testTheDeadlineStopsAStreamAndKeepsThePartialOutput(): void
    {
        $prompt = Prompt::user('Write a very long story about a dragon who learns to read.');
        $stream = self::fresh()->stream($prompt, maxTokens: 4000, nCtx: 4096, options: ['timeout' => 0.4]);
        $pieces = self::collect($stream);
        $response = $stream->response();
        $this->assertSame('timeout', $response->finishReason());
        $this->assertSame($response->text(), self::joined($pieces));
        $this->assertLessThan(4000, $response->tokensGenerated());
        if ($response->tokensGenerated() > 0) {
            $reference = self::fresh()->chat($prompt, maxTokens: $response->tokensGenerated(), nCtx: 4096);
            $this->assertSame($reference->text(), $response->text());
        }
    }

    /** @group slow */
    public function testTheDeadlineStopsAStreamInItsPromptEvaluation(): void
    {
        $model = self::fresh();
        $long = Prompt::user(str_repeat('The library opens at nine and closes at five. Books can be renewed online. ', 60));
        $stream = $model->stream($long, maxTokens: 16, nCtx: 2048, options: ['timeout' => 0.01]);
        $this->assertSame([], self::collect($stream));
        $this->assertSame('timeout', $stream->finishReason());
        $this->assertSame(0, $stream->response()->tokensGenerated());
        // The model is consistent afterwards.
        $this->assertSame(
            self::fresh()->chat($long, maxTokens: 8, nCtx: 2048)->text(),
            $model->chat($long, maxTokens: 8, nCtx: 2048)->text(),
        );
    }

    /** @return array<string, array{callable(Model): mixed, string}> */
    public static function badStreams(): array
    {
        return [
            'closed model' => [function (Model $m) {
                $m->close();
                return $m->stream(Prompt::user('Hi'));
            }, 'model has been closed'],
            'prompt too long' => [fn (Model $m) => $m->stream(Prompt::user(str_repeat('word ', 200)), nCtx: 64), 'which does not fit in nCtx = 64'],
            'unknown option' => [fn (Model $m) => $m->stream(Prompt::user('Hi'), options: ['parallel' => 2]), 'option "parallel" is not a known option (known: schema, schema_defaults, grammar, stop, top_k, top_p, min_p, repeat_penalty, typical_p, min_keep, top_n_sigma, xtc_probability, xtc_threshold, dynatemp_range, dynatemp_exponent, repeat_last_n, presence_penalty, frequency_penalty, dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers, mirostat, mirostat_tau, mirostat_eta, logit_bias, ignore_eos, samplers, adaptive_target, adaptive_decay, logprobs, top_logprobs, post_sampling_probs, cache_prompt, fast_forward, lookup, timeout, max_reasoning_tokens, template_vars, special_tokens_in_messages, tools, tool_choice, lora)'],
            'bad maxTokens' => [fn (Model $m) => $m->rawStream('Hi', maxTokens: 0), 'maxTokens must be'],
            'raw not UTF-8' => [fn (Model $m) => $m->rawStream("\xff"), 'prompt is not valid UTF-8'],
            'bad grammar' => [fn (Model $m) => $m->rawStream('Hi', options: ['grammar' => 'root ::= [z-a]']), 'grammar'],
            'NUL in a message' => [fn (Model $m) => $m->stream(Prompt::user('x')->withUser("a\0b")), 'message 1 (user) contains a NUL byte'],
        ];
    }

    /** @dataProvider badStreams */
    public function testAStreamThatCannotStartThrowsAtOnce(callable $make, string $message): void
    {
        $model = self::fresh();
        $this->assertThrows(InferenceException::class, $message, fn () => $make($model));
        if ($message !== 'model has been closed') {
            $this->assertNotSame('', $model->raw('Hi', maxTokens: 1), 'the model is free');
        }
    }

    /**
     * Reads a streamed reply from fpm-stream.php as it arrives: the lines
     * after the CGI headers, decoded. $onLine gets each line and may return
     * false to hang up.
     *
     * @param array<string, scalar> $query
     * @param callable(array): bool $onLine
     * @return list<array> the lines read, and the raw output
     */
    private function readStream(array $query, callable $onLine): array
    {
        $socket = fcgi_send('127.0.0.1', $this->fpm->port, __DIR__ . '/support/fpm-stream.php', $query, 60.0);
        $buffer = '';
        $body = false;
        $lines = [];
        try {
            while (($record = fcgi_next($socket)) !== null) {
                [$type, $content] = $record;
                if ($type !== FCGI_STDOUT) {
                    continue;
                }
                $buffer .= $content;
                if ($body === false) {
                    if (($at = strpos($buffer, "\r\n\r\n")) === false) {
                        continue;
                    }
                    $buffer = substr($buffer, $at + 4);
                    $body = true;
                }
                while (($nl = strpos($buffer, "\n")) !== false) {
                    $raw = substr($buffer, 0, $nl);
                    $buffer = substr($buffer, $nl + 1);
                    $lines[] = json_decode($raw, true) ?? ['unparsed' => $raw];
                    if ($onLine($lines[count($lines) - 1]) === false) {
                        return [$lines, $buffer];
                    }
                }
            }
            return [$lines, $buffer];
        } finally {
            fclose($socket);
        }
    }

    /** @group fpm */
    public function testUnderPhpFpmThePiecesReachTheClientAsTheyAreGenerated(): void
    {
        $this->fpm = new Fpm(1, self::modelPath());
        $marker = $this->fpm->dir . '/first-piece-arrived';
        [$lines] = $this->readStream(
            ['q' => self::QUESTION, 'max' => 48, 'marker' => $marker],
            static function (array $line) use ($marker): bool {
                // The first piece is here: tell the worker, which waits for
                // this before it generates the next token.
                if (isset($line[0]) && !file_exists($marker)) {
                    touch($marker);
                }
                return true;
            },
        );
        $end = array_pop($lines);
        array_shift($lines); // the pid
        $this->assertTrue($end['marker_seen'] ?? null, 'the client had the first piece before the worker generated the second: ' . json_encode($end));
        $this->assertSame($end['text'], implode('', array_column($lines, 1)));
        $this->assertSame(self::fresh()->chat(Prompt::user(self::QUESTION), maxTokens: 48)->text(), $end['text']);
        $this->assertGreaterThan(10, count($lines));
    }

    /** @group fpm */
    public function testUnderPhpFpmAClientThatGoesAwayEndsTheScriptAndTheWorkerServesOn(): void
    {
        $this->fpm = $fpm = new Fpm(1, self::modelPath());
        $progress = $fpm->dir . '/progress';
        [$gone] = $this->readStream(
            ['q' => 'Write a very long story about a dragon who learns to read.', 'max' => 2000, 'progress' => $progress],
            static fn (array $line): bool => !isset($line[0]), // hang up at the first piece
        );
        // The worker notices at its next writes, and PHP ends the script.
        $deadline = microtime(true) + 30;
        do {
            usleep(200000);
            $before = strlen((string) @file_get_contents($progress));
            usleep(300000);
            clearstatcache();
        } while (strlen((string) @file_get_contents($progress)) !== $before && microtime(true) < $deadline);
        $generated = strlen((string) file_get_contents($progress));
        $this->assertLessThan(100, $generated, 'the generation stopped soon after the client went away');

        // The next request meets the same worker and the same persistent
        // model, free again, with a cache that holds what it says.
        $question = 'Write a very long story about a dragon who learns to read.';
        [$lines] = $this->readStream(['q' => $question, 'max' => 12], static fn (): bool => true);
        $end = array_pop($lines);
        $this->assertSame($gone[0]['pid'], $lines[0]['pid'], 'the same worker');
        $this->assertSame(self::fresh()->chat(Prompt::user($question), maxTokens: 12, nCtx: 4096)->text(), $end['text'] ?? json_encode($lines));
        $this->assertSame($end['prompt'], $end['cached'], 'the prompt came whole from the cache of the request that was cut off');
        $this->assertStringNotContainsString('exited', $fpm->log(), 'no worker died');
    }

    /** @group fpm */
    public function testUnderPhpFpmTheTimeLimitEndsAStreamAndTheWorkerServesOn(): void
    {
        $this->fpm = $fpm = new Fpm(1, self::modelPath());
        $socket = fcgi_send('127.0.0.1', $fpm->port, __DIR__ . '/support/fpm-stream.php', [
            'q' => 'Write a very long story about a dragon who learns to read.', 'max' => 100000, 'limit' => 1,
        ]);
        $output = '';
        while (($record = fcgi_next($socket)) !== null) {
            $output .= $record[1];
        }
        fclose($socket);
        $this->assertStringContainsString('Maximum execution time of 1 second exceeded', $output);
        $this->assertStringContainsString('["answer",', $output, 'pieces came before the time limit');
        $this->assertStringNotContainsString('"finish"', $output, 'the stream did not finish');

        $question = 'Name a fruit.';
        [$lines] = $this->readStream(['q' => $question, 'max' => 8], static fn (): bool => true);
        $end = array_pop($lines);
        $this->assertSame(self::fresh()->chat(Prompt::user($question), maxTokens: 8, nCtx: 4096)->text(), $end['text'] ?? json_encode($lines));
        $this->assertStringNotContainsString('exited', $fpm->log(), 'no worker died');
    }

    /** examples/stream-endpoint.php under `php -S`: Server-Sent Events, one per piece, then `done`. */
    public function testTheServerSentEventsExampleStreamsTheReply(): void
    {
        $server = new BuiltInServer((string) realpath(__DIR__ . '/../examples/stream-endpoint.php'), self::modelPath());
        try {
            $question = 'Name two fruits.';
            [$body, $headers] = $server->get(['q' => $question]) ?? ['', []];
            $this->assertNotEmpty(preg_grep('~^Content-Type: text/event-stream~i', $headers), implode("\n", $headers));
            preg_match_all('/^event: (\w+)\ndata: (.*)\n\n/m', $body, $events, PREG_SET_ORDER);
            $done = array_pop($events);
            $this->assertSame('done', $done[1] ?? null, $body);
            $answer = implode('', array_map(static fn (array $e): string => json_decode($e[2]), $events));
            $expected = self::fresh()->chat(Prompt::system('You are a helpful assistant.')->withUser($question), maxTokens: 256);
            $this->assertSame($expected->text(), $answer);
            $this->assertSame(['answer'], array_values(array_unique(array_column($events, 1))));
            $this->assertSame($expected->finishReason(), json_decode($done[2], true)['finish']);
        } finally {
            $server->stop();
        }
    }
}
