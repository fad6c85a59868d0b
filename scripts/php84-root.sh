#!/usr/bin/env bash
# Prepare a Debian 13 (trixie) root with PHP 8.4, to build and test the
# extension against PHP 8.4 on a Debian 12 machine (whose own PHP is 8.2).
# Made once per machine, in the cache outside the checkout
# (scripts/infer-cache.sh: $INFER_CACHE_DIR/php/8.4-root-<key>, the key made
# of the packages); every checkout uses it. Idempotent: a root that is
# complete (its stamp names the packages) and intact is left as it is; a
# partial one is finished; a damaged one is made again.
#
# Needs root (debootstrap, chroot) and Debian's package mirror. Run commands
# in it with scripts/in-php84.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/infer-cache.sh"
root=$PHP84_ROOT
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
stamp="$root/.infer-root-$PHP84_KEY"
infer_cache_ready php
# One preparation at a time (two checkouts, two CI jobs).
exec 9>"$root.lock"
flock 9

# A complete root is used when its PHP packages are intact (dpkg's own
# checksums of their files) and its PHP runs; a damaged one is made again.
if [ -f "$stamp" ]; then
    php_packages=()
    for package in "${PHP84_PACKAGES[@]}"; do
        case "$package" in php*) php_packages+=("$package") ;; esac
    done
    if [ "$(id -u)" -ne 0 ]; then
        exit 0
    fi
    if chroot "$root" dpkg --verify "${php_packages[@]}" >"$root.verify.log" 2>&1 \
        && [ ! -s "$root.verify.log" ] && chroot "$root" php -n -r 'exit(PHP_MAJOR_VERSION === 8 && PHP_MINOR_VERSION === 4 ? 0 : 1);'; then
        exit 0
    fi
    echo "php84-root.sh: the root in $root is damaged ($(head -3 "$root.verify.log" | tr '\n' ' ')): made again" >&2
    rm -rf "$root"
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
    apt-get install -y -qq --no-install-recommends "${PHP84_PACKAGES[@]}" >/dev/null
rm -f "$root"/.infer-root-*
touch "$stamp"
infer_cache_prune 8.4-root "$root"
chroot "$root" php -v | head -1
