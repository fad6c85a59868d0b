#!/usr/bin/env bash
# The PHP way of building (what PIE and PECL run for a source build), from a
# clean copy of the tree (the files git knows, nothing built):
#
#   cd ext && phpize && ./configure && make && make install
#
# for the machine's PHP and, in the PHP 8.4 root, for PHP 8.4; `make install`
# into a staging root (INSTALL_ROOT), then the installed infer.so is loaded
# and answers a chat. cargo builds in the project's own target directory for
# that PHP (INFER_CARGO_TARGET_DIR), so llama.cpp is not compiled again.
#
#   scripts/test-phpize.sh [php|8.4]…   (default: both)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(php 8.4)
fi
export INFER_MODEL=${INFER_MODEL:-$here/models/SmolLM2-135M-Instruct.Q4_1.gguf}
work=$(mktemp -d /tmp/infer-phpize.XXXXXX)
trap 'rm -rf "$work"' EXIT
git ls-files -z --cached --others --exclude-standard | grep -zv '^models/' \
    | tar --null -cf - -T - | tar -xf - -C "$work"

# One build, where the PHP is: $1 is the cargo target directory.
cat >"$work/build-one.sh" <<'ONE'
set -euo pipefail
cd "$(dirname "$0")/ext"
phpize --clean >/dev/null 2>&1 || true
phpize >/dev/null
INFER_CARGO_TARGET_DIR=$1 ./configure >/dev/null
make >/dev/null
stage=$(mktemp -d)
make install INSTALL_ROOT="$stage" >/dev/null
so="$stage$(php-config --extension-dir)/infer.so"
echo "== $(php -r 'echo PHP_VERSION;'): phpize, configure, make, make install -> $so"
# The shared server's supervisor is installed beside the extension, and runs.
bash "$(dirname "$0")/scripts/check-infer-serve.sh" "$(dirname "$so")/infer-serve"
echo "infer-serve installed beside it"
php -n -d extension="$so" -r '
    $m = Displace\Infer\Model::load(getenv("INFER_MODEL"));
    $r = $m->chat(Displace\Infer\Prompt::user("Say hi."), maxTokens: 4);
    printf("infer %s loaded, a chat of %d tokens\n", phpversion("infer"), $r->tokensGenerated());
    exit($r->tokensGenerated() > 0 ? 0 : 1);'
rm -rf "$stage"
ONE

# A thread-safe PHP is refused unless --enable-infer-zts asks for the
# untested build: configure is shown a php-config whose headers say ZTS.
cat >"$work/zts-refusal.sh" <<'ZTS'
set -euo pipefail
cd "$(dirname "$0")/ext"
fake=$(mktemp -d)
mkdir -p "$fake/include/main"
sed 's/^#define ZTS .*//' "$(php-config --include-dir)/main/php_config.h" >"$fake/include/main/php_config.h"
echo '#define ZTS 1' >>"$fake/include/main/php_config.h"
cat >"$fake/php-config" <<FAKE
#!/bin/sh
if [ "\$1" = --include-dir ]; then echo "$fake/include"; else exec php-config "\$@"; fi
FAKE
chmod +x "$fake/php-config"
phpize >/dev/null
if ./configure --with-php-config="$fake/php-config" >"$fake/out" 2>&1; then
    echo "error: configure accepted a thread-safe PHP" >&2; exit 1
fi
grep -q 'infer is not tested on thread-safe (ZTS) PHP.*--enable-infer-zts' "$fake/out" \
    || { echo "error: configure refused ZTS without saying how to build anyway:" >&2; cat "$fake/out" >&2; exit 1; }
./configure --with-php-config="$fake/php-config" --enable-infer-zts >"$fake/out" 2>&1 \
    || { echo "error: --enable-infer-zts did not build past the check:" >&2; cat "$fake/out" >&2; exit 1; }
grep -q 'building anyway (--enable-infer-zts), untested' "$fake/out"
echo "== ZTS: refused by default, built past the check with --enable-infer-zts"
phpize --clean >/dev/null
rm -rf "$fake"
ZTS

for target in "${targets[@]}"; do
    case "$target" in
        8.4) bash scripts/in-php84.sh bash "$work/build-one.sh" "$here/target/php-8.4/cargo" ;;
        php)
            bash "$work/zts-refusal.sh"
            bash "$work/build-one.sh" "$here/target"
            ;;
        *) echo "error: unknown PHP $target (php or 8.4)" >&2; exit 2 ;;
    esac
done
