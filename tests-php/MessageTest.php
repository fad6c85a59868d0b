<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Prompt;

final class MessageTest extends InferTestCase
{
    public function testRoleIsOneOfTheThreeNames(): void
    {
        $roles = array_map(
            fn ($m) => $m->role(),
            Prompt::system('s')->withUser('u')->withAssistant('a')->messages(),
        );
        $this->assertSame(['system', 'user', 'assistant'], $roles);
    }

    /** @return array<string, array{string}> */
    public static function contents(): array
    {
        return [
            'empty' => [''],
            'unicode' => ["Olá, 世界 👋\nsecond line"],
            'whitespace kept' => ["  padded\t "],
            'markup' => ['<|im_start|>not special here<|im_end|>'],
            'long' => [str_repeat('abc ', 10000)],
        ];
    }

    /** @dataProvider contents */
    public function testContentIsVerbatim(string $content): void
    {
        $this->assertSame($content, Prompt::user($content)->messages()[0]->content());
        $this->assertSame($content, Prompt::system('s')->withAssistant($content)->messages()[1]->content());
    }
}
