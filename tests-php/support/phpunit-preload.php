<?php
// Given to PHPUnit with --prepend when the suite runs on a PHP newer than its
// PHPUnit (Debian 12's 9.6 on PHP 8.4, `make test PHP=8.4`): PHP 8.4's
// compiler reports PHPUnit's implicitly nullable parameters as deprecated,
// each time one of its files is first loaded, inside a test or not. Load every
// class PHPUnit and its libraries declare now, with deprecations muted, so
// that the suite itself runs with every error reported, as on 8.2.

declare(strict_types=1);

$level = error_reporting(E_ALL & ~E_DEPRECATED);
require_once 'PHPUnit/Autoload.php';
$root = dirname((string) stream_resolve_include_path('PHPUnit/Autoload.php'), 2);
$maps = array_merge([$root . '/PHPUnit/Autoload.php'], glob($root . '/*/autoload.php') ?: [], glob($root . '/*/*/autoload.php') ?: []);
foreach ($maps as $map) {
    // The autoloaders' class maps: 'lower\case\name' => '/file.php'.
    preg_match_all("/^\\s*'([a-z0-9_\\\\]+)' => /m", (string) file_get_contents($map), $m);
    foreach (array_map('stripslashes', $m[1]) as $class) {
        class_exists($class) || interface_exists($class) || trait_exists($class);
    }
}
error_reporting($level);
unset($level, $root, $maps, $map, $m, $class);
