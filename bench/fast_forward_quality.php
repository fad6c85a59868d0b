<?php
// Is an answer written with fast-forward as good as one written without it?
//
//   php -d extension=target/release/libinfer.so bench/fast_forward_quality.php MODEL [CASES] [SEED]
//
// Extraction cases are generated from templates with a fixed seed, so the
// right answer of every field is known beforehand (it is what the template
// put into the text), independently of the model and of the engine. Each case
// is asked greedily twice, with `fast_forward` on and off, and each field
// judged against the template's value: strings equal after trimming and case
// folding, numbers equal, lists equal as sets. The figures: fields right,
// records entirely right, and the cases where only one side is right.
declare(strict_types=1);

require __DIR__ . '/support.php';

use Displace\Infer\{Model, Prompt};

$model_path = $argv[1] ?? '';
$count = (int) ($argv[2] ?? 60);
$seed = (int) ($argv[3] ?? 7);
if (!is_file($model_path) || $count < 1) {
    fwrite(STDERR, "usage: php bench/fast_forward_quality.php MODEL [CASES] [SEED]\n");
    exit(2);
}

/** @return list<array{string, array, array}> [text, schema, expected] */
function cases(int $count, int $seed): array
{
    mt_srand($seed);
    $pick = fn (array $xs) => $xs[mt_rand(0, count($xs) - 1)];
    $first = ['Maria', 'John', 'Aiko', 'Pedro', 'Fatima', 'Lars', 'Chen', 'Olga', 'Samuel', 'Priya', 'Tom', 'Ines'];
    $last = ['Silva', 'Smith', 'Tanaka', 'Costa', 'Haddad', 'Berg', 'Wang', 'Ivanova', 'Okafor', 'Patel', 'Brown', 'Moreau'];
    $cities = ['Lisbon', 'Oslo', 'Kyoto', 'Porto', 'Cairo', 'Berlin', 'Lima', 'Dublin', 'Nairobi', 'Toronto', 'Madrid'];
    $jobs = ['nurse', 'teacher', 'pilot', 'baker', 'lawyer', 'engineer', 'farmer', 'chef', 'dentist', 'painter'];
    $products = ['laptop', 'chair', 'lamp', 'kettle', 'backpack', 'monitor'];
    $months = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
    $events = ['board meeting', 'product launch', 'wedding', 'concert', 'workshop', 'job interview'];
    $str = ['type' => 'string', 'maxLength' => 40];
    $object = fn (array $properties) => ['type' => 'object', 'required' => array_keys($properties),
        'additionalProperties' => false, 'properties' => $properties];
    $out = [];
    for ($i = 0; $i < $count; $i++) {
        $name = $pick($first) . ' ' . $pick($last);
        switch ($i % 4) {
            case 0:
                [$age, $city, $job] = [mt_rand(19, 88), $pick($cities), $pick($jobs)];
                $out[] = ["$name is $age years old, lives in $city and works as a $job.",
                    $object(['name' => $str, 'age' => ['type' => 'integer', 'minimum' => 0, 'maximum' => 130],
                        'city' => $str, 'job' => $str]),
                    ['name' => $name, 'age' => $age, 'city' => $city, 'job' => $job]];
                break;
            case 1:
                [$qty, $product, $express] = [mt_rand(2, 40), $pick($products), mt_rand(0, 1) === 1];
                $out[] = [sprintf('Please ship %d %ss to %s using %s delivery.', $qty, $product, $name, $express ? 'express' : 'standard'),
                    $object(['customer' => $str, 'product' => ['enum' => $products],
                        'quantity' => ['type' => 'integer', 'minimum' => 1], 'delivery' => ['enum' => ['standard', 'express']]]),
                    ['customer' => $name, 'product' => $product, 'quantity' => $qty, 'delivery' => $express ? 'express' : 'standard']];
                break;
            case 2:
                [$event, $month, $day, $city] = [$pick($events), mt_rand(1, 12), mt_rand(1, 28), $pick($cities)];
                $guests = array_values(array_unique([$pick($first), $pick($first), $pick($first)]));
                $out[] = [sprintf('The %s is on %s %d, 2027 in %s. Invited: %s.', $event, $months[$month - 1], $day, $city, implode(', ', $guests)),
                    $object(['event' => $str, 'date' => ['type' => 'string', 'format' => 'date'], 'city' => $str,
                        'guests' => ['type' => 'array', 'items' => $str, 'maxItems' => 6]]),
                    ['event' => $event, 'date' => sprintf('2027-%02d-%02d', $month, $day), 'city' => $city, 'guests' => $guests]];
                break;
            default:
                $user = strtolower(str_replace(' ', '.', $name));
                [$domain, $city] = [$pick(['example.com', 'mail.org', 'corp.net']), $pick($cities)];
                $out[] = ["You can write to $name at $user@$domain; the office is in $city.",
                    $object(['name' => $str, 'email' => ['type' => 'string', 'format' => 'email'], 'office' => $str]),
                    ['name' => $name, 'email' => "$user@$domain", 'office' => $city]];
        }
    }
    return $out;
}

function same(mixed $got, mixed $want): bool
{
    if (is_array($want)) {
        if (!is_array($got)) {
            return false;
        }
        $norm = fn (array $xs) => array_map(fn ($x) => is_string($x) ? mb_strtolower(trim($x)) : $x, $xs);
        [$a, $b] = [$norm($got), $norm($want)];
        sort($a);
        sort($b);
        return $a === $b;
    }
    if (is_string($want)) {
        return is_string($got) && mb_strtolower(trim($got)) === mb_strtolower($want);
    }
    return $got === $want;
}

$model = Model::load($model_path);
$cases = cases($count, $seed);
$system = 'Extract the requested fields from the text as JSON.';
$score = ['on' => [0, 0], 'off' => [0, 0]]; // [fields right, records right]
[$fields, $only_on, $only_off, $same_text, $forced, $tokens] = [0, 0, 0, 0, 0, 0];
foreach ($cases as [$text, $schema, $want]) {
    $right = [];
    $texts = [];
    foreach (['on' => true, 'off' => false] as $side => $ff) {
        $r = $model->chat(Prompt::system($system)->withUser($text), maxTokens: 128,
            options: ['schema' => $schema, 'fast_forward' => $ff]);
        $texts[$side] = $r->text();
        if ($ff) {
            $forced += $r->timings()['forced_tokens'];
            $tokens += $r->tokensGenerated();
        }
        $got = $r->finishReason() === 'eos' ? json_decode($r->text(), true) : null;
        $right[$side] = [];
        foreach ($want as $key => $value) {
            $right[$side][$key] = is_array($got) && array_key_exists($key, $got) && same($got[$key], $value);
        }
        $n = count(array_filter($right[$side]));
        $score[$side][0] += $n;
        $score[$side][1] += $n === count($want) ? 1 : 0;
    }
    $fields += count($want);
    $same_text += $texts['on'] === $texts['off'] ? 1 : 0;
    foreach ($want as $key => $_) {
        $only_on += $right['on'][$key] && !$right['off'][$key] ? 1 : 0;
        $only_off += $right['off'][$key] && !$right['on'][$key] ? 1 : 0;
    }
}
$name = basename($model_path);
printf("| %s | %d | %d of %d (%.1f%%) | %d of %d (%.1f%%) | %d / %d | %d / %d | %d | %.0f%% |\n", $name, $count,
    $score['on'][0], $fields, 100 * $score['on'][0] / $fields, $score['off'][0], $fields, 100 * $score['off'][0] / $fields,
    $score['on'][1], $score['off'][1], $only_on, $only_off, $same_text, 100 * $forced / max(1, $tokens));
