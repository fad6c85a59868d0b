#!/usr/bin/env bash
# Install what building and testing the extension needs, from Debian's packages:
# PHP with its headers, PHPUnit, PHP-FPM, clang/libclang (bindgen) and cmake (llama.cpp).
# Installs only when something is missing; needs root (or sudo) to install.
set -euo pipefail

missing=()
command -v php-config >/dev/null 2>&1 || missing+=(php-dev)
command -v php >/dev/null 2>&1 || missing+=(php-cli)
command -v phpunit >/dev/null 2>&1 || missing+=(phpunit)
command -v clang >/dev/null 2>&1 || missing+=(clang)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || ls /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1 || ls /usr/lib/aarch64-linux-gnu/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
php -r 'exit(extension_loaded("mbstring") ? 0 : 1);' >/dev/null 2>&1 || missing+=(php-mbstring)
php -r 'exit(extension_loaded("dom") && extension_loaded("xml") ? 0 : 1);' >/dev/null 2>&1 || missing+=(php-xml)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
# python3 -m venv: scripts/fetch-embedding-model.sh converts the embedding model in a virtualenv.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
# ccache: llama.cpp's build (GGML_CCACHE, on by default) and llama-server's
# compile through it when it is there, so a second checkout, or llama.cpp
# built for another PHP, takes the objects of the first by content hash.
command -v ccache >/dev/null 2>&1 || missing+=(ccache)
# PHP-FPM: tests-php/FpmTest.php starts two workers to test worker reuse.
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || missing+=(php-fpm)

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "Installing missing build dependencies: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "error: not root and no sudo; install these Debian packages first: ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
