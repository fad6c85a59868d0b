<?php

declare(strict_types=1);

/** System prompt number $n: about 330 tokens, its own from the first word. */
function prompt_cache_system(int $n): string
{
    return "Desk $n. You are assistant number $n of the shop. "
        . str_repeat("Rule $n: follow the house rules of desk $n carefully and answer briefly. ", 25);
}
