<?php
// Runs a list of steps on persistent models in one process (CLI) or one
// request (PHP-FPM) and prints what each step saw, one JSON line per step
// after a first line with the process id (lines already printed survive a
// fatal error). The steps come as
// JSON in argv[1] or in ?steps=. Used by PersistentModelTest.
//
//   ["load", name, path, options]  Model::load(); records the process's loads
//   ["ask", name, question]        chat() with the test's system prompt
//   ["close", name] / ["unset", name]
//   ["info"]                       the persistent models phpinfo() lists
//   ["fork-ask", path, options, question]  the same load and ask in a child
//   ["timeout", name]              a generation that outlives set_time_limit(1)

declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

const SYSTEM = 'You are the help desk of a small library. Answer in one short sentence.';

/** What phpinfo() says about persistent models (text in the CLI, HTML under FPM). */
function persistent_info(): array
{
    ob_start();
    phpinfo(INFO_MODULES);
    $text = html_entity_decode(strip_tags((string) ob_get_clean()));
    $number = static fn (string $label): ?int => preg_match('/' . $label . '\s*(?:=>)?\s*(\d+)/', $text, $m) ? (int) $m[1] : null;
    preg_match_all('/^(\/\S+)\s*(?:=>)?\s*(\d+)\s*$/m', $text, $rows, PREG_SET_ORDER);
    preg_match('/infer\.max_persistent_models\s*(?:=>)?\s*(\S+)/', $text, $ini);
    return [
        'held' => $number('persistent models held'),
        'loads' => $number('persistent model loads'),
        'models' => array_map(static fn (array $r): array => [$r[1], (int) $r[2]], $rows),
        'ini' => $ini[1] ?? null,
    ];
}

function ask(Model $model, string $question): array
{
    $r = $model->chat(Prompt::system(SYSTEM)->withUser($question), maxTokens: 12);
    return ['text' => $r->text(), 'cached' => $r->cachedTokens(), 'prompt' => $r->promptTokens()];
}

$steps = json_decode(PHP_SAPI === 'cli' ? $argv[1] : (string) $_GET['steps'], true, flags: JSON_THROW_ON_ERROR);
$models = [];
$line = static function (array $value): void {
    echo json_encode($value, JSON_INVALID_UTF8_SUBSTITUTE), "\n";
    flush();
};
$line(['pid' => getmypid()]);
try {
    foreach ($steps as $step) {
        [$op, $a, $b, $c] = $step + [null, null, null, null];
        $line(match ($op) {
            'load' => (function () use (&$models, $a, $b, $c) {
                $models[$a] = Model::load($b, $c);
                return ['loads' => persistent_info()['loads'], 'persistent' => $models[$a]->isPersistent()];
            })(),
            'ask' => ask($models[$a], $b),
            'close' => (function () use (&$models, $a) {
                $models[$a]->close();
                return ['persistent' => $models[$a]->isPersistent()];
            })(),
            'unset' => (function () use (&$models, $a) {
                unset($models[$a]);
                return [];
            })(),
            'info' => persistent_info(),
            'fork-ask' => (function () use ($a, $b, $c) {
                $file = tempnam(sys_get_temp_dir(), 'infer-fork-');
                $pid = pcntl_fork();
                if ($pid === 0) {
                    $m = Model::load($a, $b);
                    file_put_contents($file, json_encode(ask($m, $c) + ['loads' => persistent_info()['loads']]));
                    exit(0);
                }
                pcntl_waitpid($pid, $status);
                $result = json_decode((string) file_get_contents($file), true);
                unlink($file);
                return $result;
            })(),
            'timeout' => (function () use (&$models, $a) {
                set_time_limit(1);
                // Far more than one second of work: only the time limit ends it.
                $models[$a]->raw(str_repeat('Tell me a very long story. ', 4), maxTokens: 100000, nCtx: 8192);
                return ['finished' => true];
            })(),
        });
    }
} catch (Throwable $e) {
    $line(['error' => get_class($e) . ': ' . $e->getMessage()]);
}
