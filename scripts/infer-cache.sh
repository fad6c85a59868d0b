# Sourced by the scripts that build what a machine keeps between checkouts
# and runs (PHP 8.3 from source: build-php.sh; the PHP 8.4 root:
# php84-root.sh, in-php84.sh). Sets INFER_CACHE_DIR: $INFER_CACHE_DIR when
# set, else /var/cache/infer as root (not under /root: Apache's workers,
# www-data, run the thread-safe PHP's module from there), else
# ${XDG_CACHE_HOME:-~/.cache}/infer. Each entry is named by a key made of
# what it is built from, so an entry is never reused for other sources.

if [ -z "${INFER_CACHE_DIR:-}" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        INFER_CACHE_DIR=/var/cache/infer
    else
        INFER_CACHE_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/infer
    fi
fi

# The cache holds programs this machine runs: it must be writable by us
# alone, or nothing in it is used.
infer_cache_ready() { # subdirectory
    mkdir -p -m 0755 "$INFER_CACHE_DIR/$1"
    local dir owner mode
    for dir in "$INFER_CACHE_DIR" "$INFER_CACHE_DIR/$1"; do
        read -r owner mode < <(stat -c '%u %a' "$dir")
        if [ "$owner" != "$(id -u)" ] || [ $((8#$mode & 8#022)) -ne 0 ]; then
            echo "$dir is not trusted (owner uid $owner, mode $mode): it must belong to uid $(id -u) and be writable by it alone; set INFER_CACHE_DIR to another directory" >&2
            return 1
        fi
    done
}

# The PHP 8.4 root: Debian 13 with these packages (what building —
# clang and libclang for bindgen, cmake and a C++ compiler for llama.cpp,
# php8.4-dev for the headers and phpize, ccache — and testing — the CLI
# with the extensions PHPUnit needs, PHP-FPM; pcntl and posix are built in —
# need). The root's compilers are not the host's: llama.cpp is compiled
# again there (a target directory built on the host is stale in the root:
# bindgen's dependencies name the host's clang headers), through ccache into
# $INFER_CACHE_DIR/ccache-8.4 (in-php84.sh mounts it), so a second checkout
# or run takes those objects.
PHP84_PACKAGES=(php8.4-cli php8.4-dev php8.4-fpm php8.4-mbstring php8.4-xml
    clang libclang-dev cmake make g++ pkg-config ca-certificates git zip unzip
    util-linux procps python3 ccache)
PHP84_KEY=$(printf '%s\n' trixie "$(uname -m)" "${PHP84_PACKAGES[@]}" | sha256sum | cut -c1-16)
PHP84_ROOT=${PHP84_ROOT:-$INFER_CACHE_DIR/php/8.4-root-$PHP84_KEY}

# After an entry is made: the entries of the same kind made from other
# sources (an older checkout's) are removed, unless one is in use (its lock
# held: every entry's lock is <entry>.lock), so a machine keeps one entry per
# kind, not one per change.
infer_cache_prune() { # kind (8.3, 8.3-zts, 8.4-root), the entry to keep
    local entry
    for entry in "$INFER_CACHE_DIR/php/$1"-????????????????; do
        [ -d "$entry" ] && [ "$entry" != "$2" ] || continue
        (
            flock -n 9 || exit 0
            rm -rf "$entry" "$entry".*.log "$INFER_CACHE_DIR/php/.work-${entry##*/}"
            echo "removed $entry (made from other sources)"
        ) 9>>"$entry.lock"
    done
}
