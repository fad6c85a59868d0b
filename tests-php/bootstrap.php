<?php

declare(strict_types=1);

if (!extension_loaded('infer')) {
    fwrite(STDERR, "The infer extension is not loaded: run the tests with `make test`, or with\n"
        . "php -d extension=target/release/libinfer.so \$(command -v phpunit)\n");
    exit(1);
}

require __DIR__ . '/support/gguf.php';
require __DIR__ . '/support/images.php';
require __DIR__ . '/support/DefaultModel.php';
require __DIR__ . '/support/EmbeddingModel.php';
require __DIR__ . '/InferTestCase.php';
