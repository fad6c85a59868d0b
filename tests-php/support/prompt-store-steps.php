<?php

// One process of the shared prompt store's tests. argv[1] is a JSON object:
// {"model": path, "calls": [[system prompt number, question, (image colour
// 'r', 'g' or 'b', before the question)], …], and optionally "parallel" and
// "load" (Model::load()'s options)}. Prints one JSON line per call ({text, cached, prompt,
// cache}) and then the shared store's phpinfo() figures.

declare(strict_types=1);

use Displace\Infer\Image;
use Displace\Infer\Model;
use Displace\Infer\Prompt;

require __DIR__ . '/prompt-cache-prompts.php';

$job = json_decode($argv[1], true, flags: JSON_THROW_ON_ERROR);
$model = Model::load($job['model'], $job['load'] ?? []);
$image = fn (string $c) => Image::fromPixels(28, 28, str_repeat(['r' => "\xff\x00\x00", 'g' => "\x00\xff\x00", 'b' => "\x00\x00\xff"][$c], 28 * 28));
$prompts = array_map(
    fn ($c) => Prompt::system(prompt_cache_system($c[0]))->withUser(isset($c[2]) ? [$image($c[2]), $c[1]] : $c[1]),
    $job['calls'],
);
// "parallel": the calls as one chatMany() of that many sequences at a time.
$responses = isset($job['parallel'])
    ? $model->chatMany($prompts, maxTokens: 8, options: ['parallel' => $job['parallel']])
    : array_map(fn ($p) => $model->chat($p, maxTokens: 8), $prompts);
foreach ($responses as $r) {
    echo json_encode(['text' => $r->text(), 'cached' => $r->cachedTokens(), 'prompt' => $r->promptTokens(), 'cache' => $r->timings()['cache']]), "\n";
}
ob_start();
phpinfo(INFO_MODULES);
$info = (string) ob_get_clean();
preg_match('/shared prompt cache hits \/ misses \/ writes => (\d+) \/ (\d+) \/ (\d+)/', $info, $m);
preg_match('/shared prompt cache failed writes \/ rejected entries \/ evictions => (\d+) \/ (\d+) \/ (\d+)/', $info, $f);
preg_match('/prompt cache \(shared\) => (.*)/', $info, $p);
echo json_encode([
    'hits' => (int) ($m[1] ?? -1), 'misses' => (int) ($m[2] ?? -1), 'writes' => (int) ($m[3] ?? -1),
    'failed_writes' => (int) ($f[1] ?? -1), 'rejected' => (int) ($f[2] ?? -1), 'evictions' => (int) ($f[3] ?? -1),
    'store' => $p[1] ?? '',
]), "\n";
