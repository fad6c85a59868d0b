<?php
// The script PHP-FPM runs for FpmTest: one call per request, chosen by
// ?case=, answered as JSON with the request's id and the worker's pid.

declare(strict_types=1);

use Displace\Infer\{Grammar, Model, Prompt};

header('Content-Type: application/json');
$id = (string) ($_GET['id'] ?? '');
$q = (string) ($_GET['q'] ?? 'Hello');
$out = ['id' => $id, 'pid' => getmypid()];
$model = static fn (): Model => Model::load((string) getenv('INFER_MODEL'), ['n_threads' => 1, 'persistent' => ($_GET['persistent'] ?? '') === '1']);
try {
    $out['result'] = match ($_GET['case'] ?? '') {
        'chat' => $model()->chat(Prompt::user($q), maxTokens: 6)->text(),
        'schema' => $model()->chat(Prompt::user($q), maxTokens: 24, options: ['schema' => ['type' => 'object', 'properties' => ['answer' => ['type' => 'string', 'maxLength' => 12]]]])->text(),
        'system' => (function () use ($model, $q) {
            require_once __DIR__ . '/prompt-cache-prompts.php';
            $r = $model()->chat(Prompt::system(prompt_cache_system((int) ($_GET['sys'] ?? 0)))->withUser($q), maxTokens: 4);
            return ['text' => $r->text(), 'cached' => $r->cachedTokens(), 'prompt' => $r->promptTokens(), 'cache' => $r->timings()['cache']];
        })(),
        'store-row' => (function () {
            ob_start();
            phpinfo(INFO_MODULES);
            // HTML under PHP-FPM: one row, its cells as text.
            $info = html_entity_decode(strip_tags(str_replace('</td><td class="v">', ' => ', (string) ob_get_clean())));
            preg_match('/^prompt cache \(shared\) *=> (.*?) *$/m', $info, $m);
            return $m[1] ?? null;
        })(),
        'grammar' => $model()->chat(Prompt::user($q), maxTokens: 4, options: ['grammar' => 'root ::= "yes" | "no"'])->text(),
        'bad-file' => Model::load('/dev/zero'),
        'bad-gguf' => Model::load(__FILE__),
        'bad-schema' => Grammar::fromSchema(['type' => 'string', 'pattern' => '(']),
        'deep-schema' => Grammar::fromSchema(json_decode(str_repeat('{"items":', 200) . '{}' . str_repeat('}', 200), true)),
        'bad-grammar' => Grammar::check('root ::= [z-a]'),
        'bad-utf8' => Prompt::user("\xff"),
        'nul' => $model()->chat(Prompt::user("a\0b")),
        'huge-ctx' => $model()->chat(Prompt::user($q), nCtx: PHP_INT_MAX),
        'closed' => (function () use ($model) {
            $m = $model();
            $m->close();
            return $m->chat(Prompt::user('x'));
        })(),
        default => throw new InvalidArgumentException('unknown case'),
    };
} catch (Throwable $e) {
    $out['error'] = get_class($e) . ': ' . $e->getMessage();
}
echo json_encode($out, JSON_INVALID_UTF8_SUBSTITUTE);
