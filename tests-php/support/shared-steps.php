<?php
// Run by SharedServerTest in a PHP process of its own, started with the
// shared server's php.ini settings: `shared-steps.php MODEL STEP...`, each
// step answered as one JSON line on stdout as soon as it is done.

declare(strict_types=1);

use Displace\Infer\{Image, Model, Prompt};

$path = $argv[1];
$schema = ['type' => 'object', 'properties' => ['fruit' => ['type' => 'string', 'maxLength' => 20]], 'required' => ['fruit']];
foreach (array_slice($argv, 2) as $step) {
    // "name:arg:arg…"
    [$step, $args] = [explode(':', $step)[0], array_slice(explode(':', $step), 1)];
    $out = ['step' => $step, 'pid' => getmypid()];
    try {
        $model = fn (array $options = ['shared' => true]): Model => Model::load($path, $options);
        switch ($step) {
            case 'chat':
                $m = $model();
                $out['info'] = $m->info();
                $out['text'] = $m->chat(Prompt::user('Name a fruit.'), 16)->text();
                break;
            case 'image':
                // image:r|g|b — a 28 x 28 image of that colour, asked its colour.
                $rgb = ['r' => "\xff\x00\x00", 'g' => "\x00\xff\x00", 'b' => "\x00\x00\xff"][$args[0]];
                $image = Image::fromPixels(28, 28, str_repeat($rgb, 28 * 28));
                $out['text'] = $model()->chat(Prompt::user([$image, 'What colour is this image? Answer with one word.']), 16)->text();
                break;
            case 'lora':
                // lora:NAME:SCALE — the server's adapters, and a greedy text under that one adapter at that scale
                // (lora:- : no option, the server's own scales).
                $m = $model();
                $out['lora'] = $m->info()['lora'];
                $options = ['cache_prompt' => false] + ($args[0] === '-' ? [] : ['lora' => [$args[0] => (float) $args[1]]]);
                $out['text'] = $m->raw('The weather today is', 16, options: $options);
                break;
            case 'schema':
                $out['text'] = $model()->chat(Prompt::user('Name a fruit.'), 32, options: ['schema' => $schema])->text();
                break;
            case 'stream':
                $stream = $model()->stream(Prompt::user('Name a fruit.'), 16);
                $pieces = [];
                foreach ($stream as $piece) {
                    $pieces[] = $piece;
                }
                $out['pieces'] = $pieces;
                $out['text'] = $stream->text();
                break;
            case 'long':
                // Long enough for the test to kill the server meanwhile.
                $out['text'] = $model()->chat(Prompt::user('Count.'), 1900, 2048, options: ['grammar' => 'root ::= [a-z ]+'])->text();
                break;
            case 'slow':
                // A call that runs for seconds: longer than the idle time
                // of the test that asks for it.
                $began = microtime(true);
                $m = $model();
                $out['info'] = $m->info();
                $r = $m->chat(Prompt::user('Count from 1 to 500, one number per line.'), 400, 2048, options: ['grammar' => 'root ::= ([0-9]+ "\n")+']);
                $out['text'] = $r->text();
                $out['finish'] = $r->finishReason();
                $out['seconds'] = microtime(true) - $began;
                break;
            case 'embed':
                $model()->embed('hello');
                break;
            case 'embed-many':
                $model()->embedMany(['hello', 'world']);
                break;
            case 'with-threads':
                $model(['shared' => true, 'n_threads' => 2]);
                break;
            case 'wait':
                usleep(500000);
                break;
            case 'putenv':
                // What a script confined by disable_functions may still do.
                putenv("LD_PRELOAD={$args[0]}");
                putenv("TMPDIR={$args[1]}");
                putenv('LLAMA_ARG_HOST=0.0.0.0');
                break;
            case 'hold-fds':
                // A file and a listening socket open at the moment of the
                // start (under PHP-FPM: a worker's connections); their
                // descriptors' targets, as /proc lists them.
                $before = fd_targets();
                $GLOBALS['held'] = [fopen(tempnam(sys_get_temp_dir(), 'infer-held-'), 'w'), stream_socket_server('tcp://127.0.0.1:0')];
                $out['held'] = array_values(array_diff(fd_targets(), $before));
                break;
            default:
                throw new InvalidArgumentException("unknown step $step");
        }
    } catch (Throwable $e) {
        $out['error'] = get_class($e) . ': ' . $e->getMessage();
    }
    echo json_encode($out, JSON_INVALID_UTF8_SUBSTITUTE), "\n";
    flush();
}

/** @return list<string> what this process's descriptors above 2 point to */
function fd_targets(): array
{
    $targets = [];
    foreach (scandir('/proc/self/fd') as $fd) {
        if (ctype_digit($fd) && (int) $fd > 2) {
            $targets[] = (string) @readlink("/proc/self/fd/$fd");
        }
    }
    return array_values(array_unique($targets));
}
