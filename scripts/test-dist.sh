#!/usr/bin/env bash
# Install each archive of dist/ (make dist) into its PHP's extension
# directory, as PIE installs a pre-packaged binary, and run the demo with the
# extension loaded by name (`-d extension=infer`), as php.ini would after
# `pie install`. PHP 8.4's archive is tested in the PHP 8.4 root, PHP 8.3's
# (thread-safe and not) with the PHPs built from source (make php83,
# make php83-zts). The
# installed file is removed afterwards; a file already installed there is
# put back.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
shopt -s nullglob
archives=(dist/php_infer-*_php*-linux-glibc.zip dist/php_infer-*_php*-linux-glibc-zts.zip)
if [ ${#archives[@]} -eq 0 ]; then
    echo "error: no archive in dist/: run make dist first" >&2
    exit 1
fi

# install_and_run ARCHIVE: runs where the archive's PHP is (host or root).
cat >target/test-dist-one.sh <<'ONE'
set -euo pipefail
archive=$1
dir=$(php-config --extension-dir)
# A PHP built from source with no shared extension has no such directory yet.
mkdir -p "$dir"
saved=""
if [ -e "$dir/infer.so" ]; then
    saved=$(mktemp)
    cp -p "$dir/infer.so" "$saved"
fi
restore() {
    if [ -n "$saved" ]; then mv "$saved" "$dir/infer.so"; else rm -f "$dir/infer.so"; fi
}
trap restore EXIT
unzip -q -o "$archive" infer.so -d "$dir"
want=$(basename "$archive" | sed -n 's/.*_php\([0-9]*\.[0-9]*\)-.*/\1/p')
have=$(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')
if [ "$want" != "$have" ]; then
    echo "error: $archive is for PHP $want, this PHP is $have" >&2
    exit 1
fi
case "$archive" in *-zts.zip) want_zts=1 ;; *) want_zts=0 ;; esac
# PHP 8.4 made PHP_ZTS a bool (false prints as nothing); 8.3 has an int.
have_zts=$(php -r 'echo (int) PHP_ZTS;')
if [ "$want_zts" != "$have_zts" ]; then
    echo "error: $archive is for a PHP with ZTS=$want_zts, this PHP has ZTS=$have_zts" >&2
    exit 1
fi
echo "== $archive installed in $dir, PHP $have: the demo"
php -n -d extension=infer -r 'exit(extension_loaded("infer") ? 0 : 1);'
php -d extension=infer examples/demo.php
# The shared server's supervisor travels in the archive and runs here.
serve=$(mktemp -d)
unzip -q "$archive" infer-serve -d "$serve"
bash scripts/check-infer-serve.sh "$serve/infer-serve"
rm -rf "$serve"
echo "infer-serve in the archive runs"
ONE

for archive in "${archives[@]}"; do
    case "$archive" in
        *_php8.4-*) bash scripts/in-php84.sh bash target/test-dist-one.sh "$archive" ;;
        *_php8.3-*-zts.zip) PATH="$here/target/php-8.3-zts/bin:$PATH" bash target/test-dist-one.sh "$archive" ;;
        *_php8.3-*) PATH="$here/target/php-8.3/bin:$PATH" bash target/test-dist-one.sh "$archive" ;;
        *) bash target/test-dist-one.sh "$archive" ;;
    esac
done
