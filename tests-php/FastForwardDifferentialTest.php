<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Model;
use Displace\Infer\Prompt;
use Displace\Infer\Schema;

/**
 * Fast-forward is on by default, so it must be as good as sampling every token beyond extraction too: sampled at
 * temperature 1 over many seeds, calls of tools and closes of a thought end as they do without it. With it on, the
 * random draws fall elsewhere (forced tokens draw nothing), so seed by seed the texts differ; what is compared is
 * what a user sees of each answer — its finish reason, its number of calls, its arguments, a thought closed —
 * seed by seed where the outcome should not depend on the draws, and in totals where it may.
 *
 * The thresholds are what a regression crosses: before `</tool_call>` was left to the model (Qwen2.5-Coder-0.5B
 * writes it as text after a call it opened as text, and fed the one token it opened another call), 4 seeds of 40
 * wrote calls until maxTokens.
 *
 * @group slow
 */
final class FastForwardDifferentialTest extends InferTestCase
{
    private const SEEDS = 40;

    /** @return array{0: string, 1: int, 2: list<array<string, mixed>>} finish reason, calls, their arguments */
    private static function toolCall(Model $model, int $seed, bool $fastForward): array
    {
        $tools = [
            ['name' => 'get_weather', 'description' => 'Current weather in a city', 'parameters' => Schema::object([
                Schema::string('city')->required(),
                Schema::enum(['celsius', 'fahrenheit'], 'unit')->required(),
            ])],
        ];
        $prompt = Prompt::system('You are a helpful assistant.')->withUser('What is the weather in Paris right now, in celsius?');
        $r = $model->chat($prompt, maxTokens: 64, temperature: 1.0, seed: $seed, options: ['tools' => $tools, 'tool_choice' => 'required', 'fast_forward' => $fastForward]);
        return [$r->finishReason(), count($r->toolCalls()), array_map(fn ($c) => $c->arguments(), $r->toolCalls())];
    }

    /**
     * @group second-model
     */
    public function testToolCallsEndAsWithoutItOverFortySeeds(): void
    {
        $model = self::qwenModel();
        $differ = [];
        $paris = [0, 0];
        $celsius = [0, 0];
        $unended = [0, 0];
        foreach (range(1, self::SEEDS) as $seed) {
            $off = self::toolCall($model, $seed, false);
            $on = self::toolCall($model, $seed, true);
            if ([$off[0], $off[1]] !== [$on[0], $on[1]]) {
                $differ[] = "seed $seed: off {$off[0]}/{$off[1]} calls, on {$on[0]}/{$on[1]} calls";
            }
            foreach ([$off, $on] as $i => [, , $args]) {
                $paris[$i] += count(array_filter($args, fn ($a) => $a['city'] === 'Paris'));
                $celsius[$i] += count(array_filter($args, fn ($a) => $a['unit'] === 'celsius'));
            }
            foreach ([$off, $on] as $i => [$finish]) {
                $unended[$i] += $finish === 'tool_calls' ? 0 : 1;
            }
        }
        $this->assertLessThanOrEqual(1, count($differ), "finish reasons and call counts, on against off:\n" . implode("\n", $differ));
        $this->assertLessThanOrEqual($unended[0] + 1, $unended[1], 'answers not ended after their calls, off / on: ' . implode(' / ', $unended));
        // The arguments: as often right with it as without (each count of 40 or so calls).
        $this->assertGreaterThanOrEqual($paris[0] - 3, $paris[1], 'calls for Paris, off / on: ' . implode(' / ', $paris));
        $this->assertGreaterThanOrEqual($celsius[0] - 4, $celsius[1], 'calls in celsius, off / on: ' . implode(' / ', $celsius));
    }

    /**
     * A thinking template (Qwen3's shape) on SmolLM2: the thought is free text, closed by the model or by the
     * budget, then the answer is in the schema, where fast-forward writes what the schema forces.
     */
    public function testThoughtsCloseAndAnswersEndAsWithoutItOverThirtySeeds(): void
    {
        $template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            . "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
        $model = $this->modelWithTemplate($template);
        $schema = ['type' => 'object', 'required' => ['answer', 'unit'], 'additionalProperties' => false, 'properties' => [
            'answer' => ['type' => 'integer'], 'unit' => ['enum' => ['apples', 'pears']],
        ]];
        $prompt = Prompt::system('Think first, then answer in JSON.')->withUser('I had 3 apples and bought 4 more. How many apples now?');
        $outcomes = [[], []];
        foreach (range(1, 30) as $seed) {
            foreach ([false, true] as $i => $ff) {
                $r = $model->chat($prompt, maxTokens: 80, temperature: 1.0, seed: $seed, options: ['schema' => $schema, 'max_reasoning_tokens' => 24, 'fast_forward' => $ff]);
                $closed = str_contains($r->text(), '</think>');
                $this->assertTrue($closed, "seed $seed ff=$i: the thought is closed: " . $r->text());
                $outcomes[$i][] = $r->finishReason() . (json_decode($r->answer(), true) !== null ? ' valid' : ' cut');
            }
        }
        $count = fn (array $xs) => array_count_values($xs);
        [$off, $on] = [$count($outcomes[0]), $count($outcomes[1])];
        ksort($off);
        ksort($on);
        foreach (array_unique(array_merge(array_keys($off), array_keys($on))) as $outcome) {
            $this->assertEqualsWithDelta($off[$outcome] ?? 0, $on[$outcome] ?? 0, 3, "answers that end '$outcome', off / on: " . json_encode([$off, $on]));
        }
    }
}
