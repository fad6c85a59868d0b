#!/usr/bin/env bash
# Prepare a Debian 13 (trixie) root with PHP 8.4 under target/php-8.4/root, to
# build and test the extension against PHP 8.4 on a Debian 12 machine (whose
# own PHP is 8.2). Idempotent: a root that is complete (its stamp names the
# packages below) is left as it is; a partial one is finished.
#
# Needs root (debootstrap, chroot) and Debian's package mirror. Run commands
# in it with scripts/in-php84.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
root=${PHP84_ROOT:-$here/target/php-8.4/root}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What building (clang and libclang for bindgen, cmake and a C++ compiler for
# llama.cpp, php8.4-dev for the headers and phpize) and testing (the CLI with
# the extensions PHPUnit needs, PHP-FPM, pcntl and posix are built in) need.
packages=(php8.4-cli php8.4-dev php8.4-fpm php8.4-mbstring php8.4-xml
    clang libclang-dev cmake make g++ pkg-config ca-certificates git zip unzip
    util-linux procps python3)
stamp="$root/.infer-root-$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-16)"

if [ -f "$stamp" ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "error: preparing the PHP 8.4 root needs root (debootstrap and chroot)" >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

mkdir -p "$(dirname "$root")"
if [ ! -x "$root/usr/bin/apt-get" ] || [ ! -f "$root/.infer-debootstrap-done" ]; then
    echo "Creating a Debian 13 (trixie) root in $root"
    rm -rf "$root"
    debootstrap --variant=minbase trixie "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
        tail -20 "$root.debootstrap.log" >&2
        exit 1
    }
    touch "$root/.infer-debootstrap-done"
fi

# apt inside the root: its own sources, the host's name resolution.
cp /etc/resolv.conf "$root/etc/resolv.conf"
echo "deb $mirror trixie main" >"$root/etc/apt/sources.list"
# No services start in the root (php8.4-fpm's package would try).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
echo "Installing PHP 8.4 and the build tools in the root"
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get update -qq
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
rm -f "$root"/.infer-root-*
touch "$stamp"
chroot "$root" php -v | head -1
