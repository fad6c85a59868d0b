#!/usr/bin/env bash
# Build PHP 8.3.0 from the shared source tree (../shared/php-src, see its
# README.md) into target/php-8.3/ (non-thread-safe: CLI, FPM, embed) or
# target/php-8.3-zts/ (thread-safe: CLI and the Apache module, built with
# apxs; PHP builds one SAPI module at a time, so no embed library there).
#
#   scripts/build-php.sh 8.3        # make php83
#   scripts/build-php.sh 8.3-zts    # make php83-zts
#
# Each build has the extensions PHPUnit and the tests use (dom, xml,
# xmlwriter, tokenizer, mbstring, ctype, filter, pcntl, posix, sockets,
# session) and nothing else. The source tree lacks the generated timezone
# database: scripts/php-tzdb.py writes one from the system's tzdata.
#
# Idempotent and cached: a build whose stamp (the tarball's checksum, this
# script's and the tzdb script's, the flags) matches is left as it is.
# Prints how long the build took.
set -euo pipefail

flavor=${1:?usage: build-php.sh 8.3|8.3-zts}
here=$(cd "$(dirname "$0")/.." && pwd)
tarball=${PHP_SRC_TARBALL:-$here/../shared/php-src/php-8.3.0.tar.xz}
prefix=$here/target/php-$flavor
work=$here/target/php-src/$flavor

common=(
    --disable-all --disable-cgi --disable-phpdbg --enable-cli
    --with-libxml --enable-dom --enable-xml --enable-xmlwriter --enable-xmlreader --enable-simplexml
    --enable-tokenizer --enable-mbstring --disable-mbregex --enable-ctype --enable-filter
    --enable-pcntl --enable-posix --enable-sockets --enable-session
    --with-config-file-path="$prefix/etc" --with-config-file-scan-dir="$prefix/etc/conf.d"
)
case "$flavor" in
    8.3) flags=(--prefix="$prefix" "${common[@]}" --enable-fpm --enable-embed=shared) ;;
    # As FrankenPHP builds PHP for threads: without zend signals (their
    # handlers would take the signals a threaded server sends its own
    # threads: Apache's graceful restart then killed the requests in flight),
    # with a timer per thread for max_execution_time.
    8.3-zts) flags=(--prefix="$prefix" "${common[@]}" --enable-zts --disable-zend-signals
        --enable-zend-max-execution-timers --with-apxs2=/usr/bin/apxs) ;;
    *) echo "build-php.sh: unknown build $flavor (8.3 or 8.3-zts)" >&2; exit 2 ;;
esac

[ -f "$tarball" ] || { echo "build-php.sh: $tarball is missing (the PHP 8.3.0 source tree, ../shared/php-src)" >&2; exit 1; }

# What the build needs from Debian: the parser generators (the tree has no
# generated parsers), libxml2 for dom/xml, tzdata for the timezone database,
# and for the thread-safe build Apache with apxs.
need=()
command -v bison >/dev/null || need+=(bison)
command -v re2c >/dev/null || need+=(re2c)
command -v autoconf >/dev/null || need+=(autoconf)
command -v pkg-config >/dev/null || need+=(pkg-config)
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

stamp_text=$( {
    sha256sum "$tarball" | cut -d' ' -f1
    sha256sum "$here/scripts/build-php.sh" "$here/scripts/php-tzdb.py" | cut -d' ' -f1
    printf '%s\n' "${flags[@]}"
} | sha256sum | cut -d' ' -f1)
if [ -x "$prefix/bin/php" ] && [ "$(cat "$prefix/.stamp" 2>/dev/null)" = "$stamp_text" ]; then
    exit 0
fi

start=$SECONDS
rm -rf "$work" "$prefix"
mkdir -p "$work"
tar -xJf "$tarball" -C "$work" --strip-components=1
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
    # Not `make install`: apxs would install the module into the system's
    # Apache and enable it there. The module goes under the prefix instead
    # (scripts/apache-zts.sh loads it from there).
    make install-cli install-build install-headers install-programs >install.log 2>&1 || { tail -20 install.log >&2; exit 1; }
    mkdir -p "$prefix/lib/apache2"
    cp libs/libphp.so "$prefix/lib/apache2/libphp.so"
else
    make install >install.log 2>&1 || { tail -20 install.log >&2; exit 1; }
fi
# php.ini as Debian's CLI has it: PHP's production settings, no memory
# limit (the tests read model files whole).
mkdir -p "$prefix/etc/conf.d"
sed 's/^memory_limit = .*/memory_limit = -1/' php.ini-production >"$prefix/etc/php.ini"
printf '%s\n' "$stamp_text" >"$prefix/.stamp"
echo "== PHP $flavor built from source in $((SECONDS - start)) s ($("$prefix/bin/php" -r 'echo PHP_VERSION, PHP_ZTS ? " ZTS" : " NTS";'))"
