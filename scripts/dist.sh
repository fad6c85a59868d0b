#!/usr/bin/env bash
# make dist: the pre-packaged archives PIE looks for in a release's assets,
# one per PHP the extension was built for (target/release/libinfer.so for the
# machine's PHP, target/php-8.4/infer.so for PHP 8.4 when built), named as PIE
# names them, lower-case, with infer.so at the root of the archive:
#
#   dist/php_infer-{version}_php{major.minor}-{arch}-linux-glibc.zip
#
# Prints the archives' paths.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(uname -m | tr '[:upper:]' '[:lower:]')
mkdir -p dist

# archive SO PHP_VERSION: write the archive for one build.
archive() {
    local so=$1 php=$2
    local name
    name=$(printf 'php_infer-%s_php%s-%s-linux-glibc.zip' "$version" "$php" "$arch" | tr '[:upper:]' '[:lower:]')
    python3 - "$so" "dist/$name" <<'PY'
import sys, zipfile
so, out = sys.argv[1], sys.argv[2]
tmp = out + ".tmp"
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
    info = zipfile.ZipInfo("infer.so", date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = 0o755 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    with open(so, "rb") as f:
        z.writestr(info, f.read())
import os
os.replace(tmp, out)
PY
    echo "dist/$name"
}

built=0
if [ -f target/release/libinfer.so ]; then
    php_version=$(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')
    archive target/release/libinfer.so "$php_version"
    built=1
fi
if [ -f target/php-8.4/infer.so ]; then
    archive target/php-8.4/infer.so 8.4
    built=1
fi
if [ "$built" -eq 0 ]; then
    echo "error: nothing built: run make build (and make build PHP=8.4) first" >&2
    exit 1
fi
