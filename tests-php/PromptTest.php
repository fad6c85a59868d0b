<?php

declare(strict_types=1);

namespace Displace\Infer\Tests;

use Displace\Infer\Message;
use Displace\Infer\Prompt;

final class PromptTest extends InferTestCase
{
    public function testSystemStartsWithASystemMessage(): void
    {
        $p = Prompt::system('Be brief.');
        $this->assertSame(1, $p->count());
        $this->assertSame('system', $p->lastRole());
        $this->assertSame('Be brief.', $p->messages()[0]->content());
    }

    public function testUserStartsWithAUserMessage(): void
    {
        $p = Prompt::user('Hello');
        $this->assertSame(['user'], array_map(fn (Message $m) => $m->role(), $p->messages()));
    }

    public function testWithMethodsAppendInOrder(): void
    {
        $p = Prompt::system('s')->withUser('u1')->withAssistant('a1')->withUser('u2')->withSystem('s2');
        $this->assertSame(
            [['system', 's'], ['user', 'u1'], ['assistant', 'a1'], ['user', 'u2'], ['system', 's2']],
            array_map(fn (Message $m) => [$m->role(), $m->content()], $p->messages()),
        );
        $this->assertSame(5, $p->count());
        $this->assertSame('system', $p->lastRole());
    }

    public function testWithMethodsReturnANewPromptAndLeaveTheOriginalUnchanged(): void
    {
        $base = Prompt::user('one');
        $a = $base->withAssistant('two');
        $b = $base->withUser('three');
        $this->assertNotSame($base, $a);
        $this->assertSame(1, $base->count());
        $this->assertSame(['one', 'two'], array_map(fn (Message $m) => $m->content(), $a->messages()));
        $this->assertSame(['one', 'three'], array_map(fn (Message $m) => $m->content(), $b->messages()));
    }

    public function testMessagesIsAList(): void
    {
        $messages = Prompt::user('a')->withAssistant('b')->messages();
        $this->assertTrue(array_is_list($messages));
        $this->assertContainsOnlyInstancesOf(Message::class, $messages);
    }

    public function testIsEmptyIsFalseForAnyPromptTheFactoriesMake(): void
    {
        $this->assertFalse(Prompt::user('')->isEmpty());
        $this->assertFalse(Prompt::system('x')->isEmpty());
        $this->assertSame(1, Prompt::user('')->count());
    }

    public function testLastRoleFollowsTheLastMessage(): void
    {
        $this->assertSame('assistant', Prompt::user('q')->withAssistant('a')->lastRole());
        $this->assertSame('user', Prompt::system('s')->withUser('q')->lastRole());
    }
}
