#!/usr/bin/env bash
# make dist: the pre-packaged archives PIE looks for in a release's assets,
# one per PHP the extension was built for (target/php-host/infer.so for the
# machine's PHP, target/php-8.4/infer.so, target/php-8.3/infer.so and
# target/php-8.3-zts/infer.so when built), named as PIE names them
# (php/pie's PrePackagedBinaryAssetName: lower-case, `-zts` after the libc for
# a thread-safe PHP, `-debug` before it for a debug build, which we do not
# make), with infer.so at the root of the archive and, beside
# it, infer-serve (the shared server's supervisor, which the extension looks
# for beside itself: PIE installs only infer.so from such an archive, so
# docs/production.md says to copy it):
#
#   dist/php_infer-{version}_php{major.minor}-{arch}-linux-glibc[-zts].zip
#
# Prints the archives' paths.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(uname -m | tr '[:upper:]' '[:lower:]')
mkdir -p dist

# archive SO SERVE PHP_VERSION [-zts]: write the archive for one build.
archive() {
    local so=$1 serve=$2 php=$3 ts=${4:-}
    local name newer
    [ -x "$serve" ] || { echo "error: $serve is missing: build it (make build) first" >&2; exit 1; }
    # A build left from before the last change of the sources is not what
    # they build now.
    newer=$(find src crates Cargo.toml Cargo.lock build.rs -newer "$so" -type f -print -quit)
    if [ -n "$newer" ]; then
        echo "error: $so is older than $newer: make build for PHP $php${ts} again first" >&2
        exit 1
    fi
    name=$(printf 'php_infer-%s_php%s-%s-linux-glibc%s.zip' "$version" "$php" "$arch" "$ts" | tr '[:upper:]' '[:lower:]')
    python3 - "$so" "$serve" "dist/$name" <<'PY'
import os, sys, zipfile
so, serve, out = sys.argv[1], sys.argv[2], sys.argv[3]
tmp = out + ".tmp"
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
    for name, path in (("infer.so", so), ("infer-serve", serve)):
        info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = 0o755 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        with open(path, "rb") as f:
            z.writestr(info, f.read())
os.replace(tmp, out)
PY
    echo "dist/$name"
}

built=0
if [ -f target/php-host/infer.so ]; then
    php_version=$(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')
    archive target/php-host/infer.so target/php-host/infer-serve "$php_version"
    built=1
fi
if [ -f target/php-8.4/infer.so ]; then
    archive target/php-8.4/infer.so target/php-8.4/infer-serve 8.4
    built=1
fi
if [ -f target/php-8.3/infer.so ]; then
    archive target/php-8.3/infer.so target/php-8.3/infer-serve 8.3
    built=1
fi
if [ -f target/php-8.3-zts/infer.so ]; then
    archive target/php-8.3-zts/infer.so target/php-8.3-zts/infer-serve 8.3 -zts
    built=1
fi
if [ "$built" -eq 0 ]; then
    echo "error: nothing built: run make build (and make build PHP=8.4) first" >&2
    exit 1
fi
