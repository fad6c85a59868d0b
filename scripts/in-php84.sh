#!/usr/bin/env bash
# Run a command in the PHP 8.4 root (scripts/php84-root.sh prepares it), with
# the project at the same path inside, the Rust toolchain and /dev/shm
# shared with the host, and the project's directory as the working directory.
#
#   scripts/in-php84.sh php -v
#   scripts/in-php84.sh make build PHP=8.4
#
# The mounts are made in a private mount namespace (unshare), so they vanish
# with the command, whatever way it ends.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/infer-cache.sh"
root=$PHP84_ROOT
if ! ls "$root"/.infer-root-* >/dev/null 2>&1; then
    "$here/scripts/php84-root.sh"
fi
if [ $# -eq 0 ]; then
    set -- bash
fi
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
cwd=$(pwd)
ccache_dir=$INFER_CACHE_DIR/ccache-8.4
mkdir -p -m 0755 "$ccache_dir"

# Inside the new mount namespace: bind what the command needs, then chroot.
# The project's own settings (INFER_*) go through; the rest of the host's
# environment stays outside.
passed=()
while IFS= read -r -d '' var; do
    case "$var" in INFER_*=*) passed+=("$var") ;; esac
done < <(env -0)

exec unshare --mount --propagation private -- /usr/bin/env \
    ROOT="$root" HERE="$here" CCACHE_ROOT_DIR="$ccache_dir" CARGO_DIR="$cargo_home" RUSTUP_DIR="$rustup_home" CWD="$cwd" \
    PASSED="$(printf '%s\n' "${passed[@]+"${passed[@]}"}")" \
    bash -c '
set -euo pipefail
bind() {
    mkdir -p "$ROOT$2"
    mount --bind "$1" "$ROOT$2"
}
mount -t proc proc "$ROOT/proc"
bind /dev /dev
bind /dev/shm /dev/shm
bind /sys /sys
bind /tmp /tmp
bind "$HERE" "$HERE"
# The project reads ../shared (the contract, the benchmark data) and the
# tool library beside it when they are there.
parent=$(dirname "$HERE")
for sibling in shared .library; do
    if [ -d "$parent/$sibling" ]; then
        bind "$parent/$sibling" "$parent/$sibling"
    fi
done
# The host'"'"'s PHPUnit (Debian 12'"'"'s 9.6, what the suite is written for),
# under /opt/host-php: trixie ships PHPUnit 11.
if [ -f /usr/bin/phpunit ] && [ -d /usr/share/php/PHPUnit ]; then
    bind /usr/share/php /opt/host-php/share
    touch "$ROOT/opt/host-php/phpunit"
    mount --bind /usr/bin/phpunit "$ROOT/opt/host-php/phpunit"
fi
# The Python installations the project'"'"'s virtualenvs were made from (the
# embedding tests'"'"' reference computation runs in one), when they are not the
# system'"'"'s own.
for cfg in "$HERE"/target/*/pyvenv.cfg; do
    [ -f "$cfg" ] || continue
    home=$(sed -n "s/^home = //p" "$cfg")
    prefix=$(dirname "$home")
    case "$prefix" in
        /usr|/usr/local|/) ;;
        *) if [ -d "$prefix" ] && ! mountpoint -q "$ROOT$prefix"; then bind "$prefix" "$prefix"; fi ;;
    esac
done
bind "$CARGO_DIR" /root/.cargo
# The ccache directory of the root, kept in the machine cache (the
# compilers of the root are its own: their objects are kept apart).
bind "$CCACHE_ROOT_DIR" /root/.cache/ccache
bind "$RUSTUP_DIR" /root/.rustup
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
passed=()
if [ -n "$PASSED" ]; then mapfile -t passed <<<"$PASSED"; fi
exec chroot "$ROOT" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" "${passed[@]+"${passed[@]}"}" \
    PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    CARGO_HOME=/root/.cargo RUSTUP_HOME=/root/.rustup CCACHE_BASEDIR="$HERE" \
    INFER_PHP_ROOT=8.4 \
    bash -c "cd \"\$0\" && exec \"\$@\"" "$CWD" "$@"
' bash "$@"
