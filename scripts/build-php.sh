#!/usr/bin/env bash
# Build PHP 8.3.0 from the shared source tree (../shared/php-src, see its
# README.md): non-thread-safe (CLI, FPM, embed) or thread-safe (CLI and the
# Apache module, built with apxs; PHP builds one SAPI module at a time, so no
# embed library there).
#
#   scripts/build-php.sh 8.3        # make php83
#   scripts/build-php.sh 8.3-zts    # make php83-zts
#
# Each build has the extensions PHPUnit and the tests use (dom, xml,
# xmlwriter, tokenizer, mbstring, ctype, filter, pcntl, posix, sockets,
# session) and nothing else. The source tree lacks the generated timezone
# database: scripts/php-tzdb.py writes one from the system's tzdata.
#
# Built once per machine, not once per checkout or run: the build lives in a
# cache outside the checkout, $INFER_CACHE_DIR/php/<flavor>-<key>
# (scripts/infer-cache.sh: /var/cache/infer as root by default), where
# the key is the SHA-256 of the source tarball and the tzdb script, of the
# build's steps (the recipe below), the configure flags and the machine's
# architecture. An entry
# is used only when complete and intact: its stamp (written last) names the
# key and the checksum of its manifest, every file of the manifest has the
# checksum it was built with, and its php runs and says 8.3.0; anything else
# (a build cut short, a file changed or gone) is removed and built again.
# Builds of one entry are serialised by a lock, so two checkouts or CI jobs
# on one machine share it. target/php-<flavor>/ in the checkout holds links
# to the entry's directories (bin, lib, …; so target/php-8.3/bin/php is that
# PHP) beside what is built for it there (infer.so, infer-serve).
# Prints how long the build took, or that the cached one was used.
set -euo pipefail

flavor=${1:?usage: build-php.sh 8.3|8.3-zts}
here=$(cd "$(dirname "$0")/.." && pwd)
tarball=${PHP_SRC_TARBALL:-$here/../shared/php-src/php-8.3.0.tar.xz}
. "$here/scripts/infer-cache.sh"
cache=$INFER_CACHE_DIR
# Where the checkout sees the build (INFER_PHP_LINK: the tests of this
# script point it elsewhere).
link=${INFER_PHP_LINK:-$here/target/php-$flavor}

case "$flavor" in
    8.3 | 8.3-zts) ;;
    *) echo "build-php.sh: unknown build $flavor (8.3 or 8.3-zts)" >&2; exit 2 ;;
esac
[ -f "$tarball" ] || { echo "build-php.sh: $tarball is missing (the PHP 8.3.0 source tree, ../shared/php-src)" >&2; exit 1; }

# The flags without the prefix (the prefix is named by the key made of them).
common=(
    --disable-all --disable-cgi --disable-phpdbg --enable-cli
    --with-libxml --enable-dom --enable-xml --enable-xmlwriter --enable-xmlreader --enable-simplexml
    --enable-tokenizer --enable-mbstring --disable-mbregex --enable-ctype --enable-filter
    --enable-pcntl --enable-posix --enable-sockets --enable-session
)
case "$flavor" in
    8.3) extra=(--enable-fpm --enable-embed=shared) ;;
    # As FrankenPHP builds PHP for threads: without zend signals (their
    # handlers would take the signals a threaded server sends its own
    # threads: Apache's graceful restart then killed the requests in flight),
    # with a timer per thread for max_execution_time.
    8.3-zts) extra=(--enable-zts --disable-zend-signals --enable-zend-max-execution-timers --with-apxs2=/usr/bin/apxs) ;;
esac
# The key: the sources, the flags, the steps of the build (the text between
# the recipe marks below; comments elsewhere in this script change nothing)
# and the architecture.
key=$( {
    sha256sum "$tarball" "$here/scripts/php-tzdb.py" | cut -d' ' -f1
    sed -n '/^# recipe:begin/,/^# recipe:end/p' "$here/scripts/build-php.sh"
    printf '%s\n' "${common[@]}" "${extra[@]}" "$(uname -m)"
} | sha256sum | cut -c1-16)
prefix=$cache/php/$flavor-$key
flags=(--prefix="$prefix" "${common[@]}" "${extra[@]}"
    --with-config-file-path="$prefix/etc" --with-config-file-scan-dir="$prefix/etc/conf.d")

# What the build needs from Debian: the parser generators (the tree has no
# generated parsers), libxml2 for dom/xml, tzdata for the timezone database,
# and for the thread-safe build Apache with apxs.
need=()
command -v bison >/dev/null || need+=(bison)
command -v re2c >/dev/null || need+=(re2c)
command -v autoconf >/dev/null || need+=(autoconf)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v flock >/dev/null || need+=(util-linux)
[ -f /usr/include/libxml2/libxml/parser.h ] || need+=(libxml2-dev)
[ -f /usr/share/zoneinfo/Europe/Lisbon ] || need+=(tzdata)
if [ "$flavor" = 8.3-zts ]; then
    [ -x /usr/bin/apxs ] || need+=(apache2-dev)
    [ -x /usr/sbin/apache2 ] || need+=(apache2)
fi
if [ ${#need[@]} -gt 0 ]; then
    echo "build-php.sh: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

infer_cache_ready php

# recipe:begin
# Unpack, configure, build and install into $prefix, in the work directory $1.
build_into() {
    local work=$1
    tar -xJf "$tarball" -C "$work" --strip-components=1
    (
        cd "$work"
        python3 "$here/scripts/php-tzdb.py" /usr/share/zoneinfo ext/date/lib/timezonedb.h
        ./buildconf --force >/dev/null
        ./configure "${flags[@]}" >configure.log 2>&1 || { tail -30 configure.log >&2; exit 1; }
        if [ "$flavor" = 8.3-zts ]; then
            grep -q '^#define ZTS 1' main/php_config.h || { echo "build-php.sh: configure did not define ZTS" >&2; exit 1; }
            grep -q '^#define ZEND_SIGNALS 1' main/php_config.h && { echo "build-php.sh: zend signals are still on" >&2; exit 1; }
            grep -q '^#define ZEND_MAX_EXECUTION_TIMERS 1' main/php_config.h || { echo "build-php.sh: no per-thread execution timers" >&2; exit 1; }
        fi
        make -j"$(nproc)" >make.log 2>&1 || { tail -40 make.log >&2; exit 1; }
        if [ "$flavor" = 8.3-zts ]; then
            # Not `make install`: apxs would install the module into the
            # system's Apache and enable it there. The module goes under the
            # prefix instead (scripts/apache-zts.sh loads it from there).
            make install-cli install-build install-headers install-programs >install.log 2>&1 || { tail -20 install.log >&2; exit 1; }
            mkdir -p "$prefix/lib/apache2"
            cp libs/libphp.so "$prefix/lib/apache2/libphp.so"
        else
            make install >install.log 2>&1 || { tail -20 install.log >&2; exit 1; }
        fi
        # php.ini as Debian's CLI has it: PHP's production settings, no
        # memory limit (the tests read model files whole).
        mkdir -p "$prefix/etc/conf.d"
        sed 's/^memory_limit = .*/memory_limit = -1/' php.ini-production >"$prefix/etc/php.ini"
    )
}
# recipe:end

# The stamp: the key and the checksum of the manifest (every file of the
# build and its SHA-256), written last.
intact() {
    [ -f "$prefix/.stamp" ] && [ -f "$prefix/.manifest" ] || return 1
    [ "$(cat "$prefix/.stamp")" = "$key $(sha256sum <"$prefix/.manifest" | cut -c1-64)" ] || return 1
    (cd "$prefix" && sha256sum --quiet --strict -c .manifest >/dev/null 2>&1) || return 1
    [ "$("$prefix/bin/php" -n -r 'echo PHP_VERSION;' 2>/dev/null)" = 8.3.0 ] || return 1
}

exec 9>"$prefix.lock"
flock 9
if intact; then
    echo "== PHP $flavor: the cached build ($prefix)"
else
    start=$SECONDS
    if [ -e "$prefix" ]; then
        echo "build-php.sh: $prefix is incomplete or damaged: built again" >&2
    fi
    rm -rf "$prefix"
    work=$cache/php/.work-$flavor-$key
    rm -rf "$work"
    mkdir -p "$work"
    build_into "$work"
    chmod -R go-w "$prefix"
    (cd "$prefix" && find . -type f ! -name .manifest ! -name .stamp -print0 | sort -z | xargs -0 sha256sum) >"$work/manifest"
    mv "$work/manifest" "$prefix/.manifest"
    printf '%s %s\n' "$key" "$(sha256sum <"$prefix/.manifest" | cut -c1-64)" >"$prefix/.stamp"
    intact || { echo "build-php.sh: the build in $prefix does not pass its own check" >&2; exit 1; }
    rm -rf "$work"
    infer_cache_prune "$flavor" "$prefix"
    echo "== PHP $flavor built from source in $((SECONDS - start)) s ($("$prefix/bin/php" -r 'echo PHP_VERSION, PHP_ZTS ? " ZTS" : " NTS";'), cached in $prefix)"
fi
exec 9>&-

# The checkout's view of the build: a link to each of its directories. An
# older checkout's build in place (real directories) is removed first.
mkdir -p "$link"
for name in bin etc include lib php sbin var .stamp; do
    rm -rf "${link:?}/$name"
done
for dir in "$prefix"/*; do
    ln -sfn "$dir" "$link/${dir##*/}"
done
