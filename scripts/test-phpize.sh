#!/usr/bin/env bash
# The PHP way of building (what PIE and PECL run for a source build), from a
# clean copy of the tree (the files git knows, nothing built):
#
#   cd ext && phpize && ./configure && make && make install
#
# for the machine's PHP, in the PHP 8.4 root for PHP 8.4, and for the PHP
# 8.3 builds from source (thread-safe and not, make php83 php83-zts); `make install`
# into a staging root (INSTALL_ROOT), then the installed infer.so is loaded
# and answers a chat. cargo builds in the project's own target directory for
# that PHP (INFER_CARGO_TARGET_DIR), so llama.cpp is not compiled again.
#
#   scripts/test-phpize.sh [php|8.4|8.3|8.3-zts]…   (default: php and 8.4,
#   and each 8.3 that is built)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(php 8.4)
    for built in 8.3 8.3-zts; do
        [ -x "target/php-$built/bin/php" ] && targets+=("$built")
    done
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

for target in "${targets[@]}"; do
    case "$target" in
        8.4) bash scripts/in-php84.sh bash "$work/build-one.sh" "$here/target/php-8.4/cargo" ;;
        php) bash "$work/build-one.sh" "$here/target" ;;
        8.3 | 8.3-zts)
            # phpize, php-config and php of that build; cargo in the
            # project's target directory (only the binding is built again).
            PATH="$here/target/php-$target/bin:$PATH" bash "$work/build-one.sh" "$here/target"
            ;;
        *) echo "error: unknown PHP $target (php, 8.4, 8.3 or 8.3-zts)" >&2; exit 2 ;;
    esac
done
