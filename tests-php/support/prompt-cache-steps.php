<?php

// Ask one question under each system prompt whose number argv[1] lists (a
// JSON list), in that order, on one model; print one JSON line per call
// ({cached, prompt, cache}) and then the prompt cache's phpinfo() row.

declare(strict_types=1);

use Displace\Infer\Model;
use Displace\Infer\Prompt;

require __DIR__ . '/prompt-cache-prompts.php';

$model = Model::load($argv[2]);
foreach (json_decode($argv[1], true, flags: JSON_THROW_ON_ERROR) as $n => $which) {
    $r = $model->chat(Prompt::system(prompt_cache_system($which))->withUser("Question $n: how are you?"), maxTokens: 2);
    echo json_encode(['cached' => $r->cachedTokens(), 'prompt' => $r->promptTokens(), 'cache' => $r->timings()['cache']]), "\n";
}
ob_start();
phpinfo(INFO_MODULES);
preg_match('/prompt cache hits \/ misses \/ evictions => (\d+) \/ (\d+) \/ (\d+)/', (string) ob_get_clean(), $m);
echo json_encode(['hits' => (int) ($m[1] ?? -1), 'misses' => (int) ($m[2] ?? -1), 'evictions' => (int) ($m[3] ?? -1)]), "\n";
