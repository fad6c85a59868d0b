<?php
// The script Apache's threads run for ApacheZtsTest: one call per request,
// chosen by ?case=, answered as JSON with the request's id, the process and
// the thread (from /proc/thread-self) that served it.

declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

header('Content-Type: application/json');
$id = (string) ($_GET['id'] ?? '');
$q = (string) ($_GET['q'] ?? 'Hello');
$max = (int) ($_GET['max'] ?? 8);
$thread = (string) @readlink('/proc/thread-self');
$out = ['id' => $id, 'pid' => getmypid(), 'thread' => $thread];
// n_threads 1 unless ?threads=auto: the machine's cores, shared with the
// other requests and processes through the thread budget.
$threads = (string) ($_GET['threads'] ?? '1');
$options = ['persistent' => ($_GET['persistent'] ?? '1') === '1'] + ($threads === 'auto' ? [] : ['n_threads' => (int) $threads]);
$model = static fn (): Model => Model::load((string) getenv('INFER_MODEL'), $options);
if (isset($_GET['limit'])) {
    set_time_limit((int) $_GET['limit']);
}
try {
    $out['result'] = match ($_GET['case'] ?? '') {
        'chat' => $model()->chat(Prompt::user($q), maxTokens: $max, nCtx: 256)->text(),
        // A relative path after chdir(): the request's directory's file.
        'jail' => (function () {
            chdir((string) $_GET['dir']);
            $image = Displace\Infer\Image::fromFile((string) $_GET['file']);
            return $image->width() . 'x' . $image->height();
        })(),
        'chat-cached' => (function () use ($model, $q, $max) {
            $r = $model()->chat(Prompt::user($q), maxTokens: $max, nCtx: 256);
            return ['text' => $r->text(), 'cached' => $r->cachedTokens(), 'prompt' => $r->promptTokens()];
        })(),
        'schema' => $model()->chat(Prompt::user($q), maxTokens: 24, nCtx: 256, options: ['schema' => ['type' => 'object', 'properties' => ['answer' => ['type' => 'string', 'maxLength' => 12]]]])->text(),
        // Generates until the request's own limit (set_time_limit) or the
        // call's `timeout` stops it.
        'long' => $model()->chat(Prompt::user('Count from 1 to 10000, one number per line.'), maxTokens: 100000, nCtx: 8192, options: isset($_GET['timeout']) ? ['timeout' => (float) $_GET['timeout']] : [])->finishReason(),
        'stream' => (function () use ($model, $q, $max) {
            // Each piece is sent to the client as it comes.
            header('Content-Type: text/plain');
            while (ob_get_level() > 0) {
                ob_end_flush();
            }
            $stream = $model()->stream(Prompt::user($q), maxTokens: $max, nCtx: 256);
            foreach ($stream as $piece) {
                echo json_encode(['t' => microtime(true), 'piece' => (string) $piece]), "\n";
                flush();
            }
            exit;
        })(),
        'bad-load' => Model::load((string) $_GET['file'], ['n_threads' => 1]),
        'bad-schema' => $model()->chat(Prompt::user($q), maxTokens: 4, options: ['schema' => ['type' => 'string', 'pattern' => '(']]),
        'many' => array_map(fn ($r) => $r->text(), $model()->chatMany([Prompt::user($q), Prompt::user('Say no.'), Prompt::user($q)], maxTokens: $max, nCtx: 256)),
        'embed' => (function () {
            $e = Model::load((string) getenv('INFER_EMBEDDING_MODEL'), ['embedding' => true, 'persistent' => true, 'n_threads' => 1]);
            return $e->embed('The cat sat on the mat.')->vector();
        })(),
        'cached' => (function () use ($model, $q) {
            $system = str_repeat('You answer in one word. ', 20);
            $r = $model()->chat(Prompt::system($system)->withUser($q), maxTokens: 2, nCtx: 512);
            return ['text' => $r->text(), 'cached' => $r->cachedTokens(), 'prompt' => $r->promptTokens()];
        })(),
        'shared' => Model::load((string) getenv('INFER_MODEL'), ['shared' => true])->chat(Prompt::user($q), maxTokens: $max, nCtx: 256)->text(),
        'ini' => (function () {
            // What this request sees of a setting another request changed.
            $before = ini_get('infer.prompt_cache_mb');
            if (($_GET['set'] ?? '') !== '') {
                ini_set('infer.prompt_cache_mb', (string) $_GET['set']);
                usleep(300000);
            }
            return ['before' => $before, 'after' => ini_get('infer.prompt_cache_mb')];
        })(),
        'rss' => (function () {
            preg_match('/^VmRSS:\s+(\d+) kB/m', (string) file_get_contents('/proc/self/status'), $m);
            return (int) ($m[1] ?? 0);
        })(),
        default => throw new InvalidArgumentException('unknown case'),
    };
} catch (Throwable $e) {
    $out['error'] = get_class($e) . ': ' . $e->getMessage();
}
echo json_encode($out, JSON_INVALID_UTF8_SUBSTITUTE);
