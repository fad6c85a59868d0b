<?php
// A tool-using conversation with Qwen2.5-Coder-0.5B-Instruct (`make qwen-model`): the model calls a tool, gets the
// result and answers. Every call is a call of a declared tool whose arguments satisfy its schema.
//
//   php -d extension=target/release/libinfer.so examples/tools.php [MODEL]
declare(strict_types=1);

use Displace\Infer\{Model, Prompt};

$model = Model::load($argv[1] ?? getenv('INFER_QWEN_MODEL') ?: __DIR__ . '/../models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
$tools = [
    ['name' => 'get_weather', 'description' => 'Current weather in a city', 'parameters' => [
        'type' => 'object',
        'properties' => ['city' => ['type' => 'string'], 'unit' => ['enum' => ['celsius', 'fahrenheit']]],
        'required' => ['city', 'unit'],
    ]],
    ['name' => 'get_time', 'description' => 'Current local time in a city', 'parameters' => [
        'type' => 'object', 'properties' => ['city' => ['type' => 'string']], 'required' => ['city'],
    ]],
];
// The "tools" of this example: fixed answers.
$run = fn (string $name, array $args): array => match ($name) {
    'get_weather' => ['city' => $args['city'], 'temperature' => 18, 'unit' => $args['unit'], 'sky' => 'cloudy'],
    'get_time' => ['city' => $args['city'], 'time' => '14:05'],
};

$prompt = Prompt::system('You are a helpful assistant.')->withUser('What is the weather in Paris right now, in celsius?');
$r = $model->chat($prompt, maxTokens: 128, options: ['tools' => $tools]);
echo "finish: {$r->finishReason()}\n";
foreach ($r->toolCalls() as $call) {
    echo "call {$call->id()}: {$call->name()}({$call->argumentsJson()})\n";
    $prompt = $prompt->withToolCalls([$call])
        ->withToolResult($call->id(), json_encode($run($call->name(), $call->arguments())), $call->name());
}
$answer = $model->chat($prompt->withUser('Using the tool results above, answer my question in one sentence.'), maxTokens: 96, options: ['tools' => $tools]);
echo "answer: {$answer->answer()}\n";
