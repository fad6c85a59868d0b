#!/usr/bin/env bash
# The machine's cache of PHP builds (scripts/build-php.sh), tested on a
# stand-in PHP source tree whose build takes a second: its `configure` and
# `make` install a `php` that answers as PHP 8.3.0, and count each build. A
# second run uses the entry; an entry with a changed file, a missing file, no
# stamp, or left by a build that failed is never used and is built again; a
# cache another user can write is refused; the flags and the sources are
# part of the key, and an entry of older sources is removed once a newer one
# is made.
# Run by `make test` (a few seconds); exits non-zero on the first failure.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export INFER_CACHE_DIR=$tmp/cache
export INFER_PHP_LINK=$tmp/checkout/php
builds=$tmp/builds
: >"$builds"

# The stand-in source tree: buildconf, configure and a Makefile whose
# install writes bin/php (an answer of PHP 8.3.0) and a library.
src=$tmp/php-8.3.0
mkdir -p "$src/ext/date/lib" "$src/main" "$src/libs"
printf '#!/bin/sh\nexit 0\n' >"$src/buildconf"
cat >"$src/configure" <<'CONF'
#!/bin/sh
[ -z "$FAKE_CONFIGURE_FAILS" ] || { echo "configure: failing as asked" >&2; exit 1; }
for arg in "$@"; do
    case "$arg" in --prefix=*) prefix=${arg#--prefix=} ;; esac
done
printf 'PREFIX=%s\n' "$prefix" >Makefile.vars
case " $* " in *" --enable-zts "*) printf '#define ZTS 1\n#define ZEND_MAX_EXECUTION_TIMERS 1\n' >main/php_config.h ;; *) : >main/php_config.h ;; esac
cat Makefile.vars Makefile.in >Makefile
CONF
cat >"$src/Makefile.in" <<'MK'
all:
	echo built >>$(BUILDS)
	touch libs/libphp.so
install install-cli install-build install-headers install-programs:
	mkdir -p $(PREFIX)/bin $(PREFIX)/lib
	printf '#!/bin/sh\necho 8.3.0\n' >$(PREFIX)/bin/php
	chmod 755 $(PREFIX)/bin/php
	echo library >$(PREFIX)/lib/libphp-stand-in.so
MK
printf 'memory_limit = 128M\n' >"$src/php.ini-production"
chmod +x "$src/buildconf" "$src/configure"
tar -cJf "$tmp/php-8.3.0.tar.xz" -C "$tmp" php-8.3.0
export PHP_SRC_TARBALL=$tmp/php-8.3.0.tar.xz
export BUILDS=$builds

fail() {
    echo "test-build-cache: FAILED: $*" >&2
    exit 1
}
run() { # flavor: runs build-php.sh, its output in $out
    out=$(bash "$here/scripts/build-php.sh" "$1" 2>&1) || { echo "$out" >&2; return 1; }
}
count() { wc -l <"$builds"; }
entry() { # flavor
    local dirs=("$INFER_CACHE_DIR"/php/"$1"-????????????????)
    echo "${dirs[0]}"
}

run 8.3 || fail "the first build"
[ "$(count)" -eq 1 ] || fail "the first run builds once (builds: $(count))"
grep -q "built from source" <<<"$out" || fail "the first run says it built: $out"
e=$(entry 8.3)
[ -f "$e/.stamp" ] && [ -f "$e/.manifest" ] || fail "an entry has its stamp and manifest"
[ "$(readlink "$INFER_PHP_LINK/bin")" = "$e/bin" ] || fail "the checkout links the entry's bin"
[ "$("$INFER_PHP_LINK/bin/php" -r x)" = 8.3.0 ] || fail "the linked php runs"
echo "ok: a first run builds, stamps the entry and links the checkout to it"

run 8.3 || fail "the second run"
[ "$(count)" -eq 1 ] || fail "a second run reuses the entry (builds: $(count))"
grep -q "the cached build" <<<"$out" || fail "the second run says it used the cache: $out"
echo "ok: a second run uses the cached build"

echo "tampered" >>"$e/bin/php"
run 8.3 || fail "the run after a changed file"
[ "$(count)" -eq 2 ] || fail "a changed file is built again (builds: $(count))"
grep -q "incomplete or damaged: built again" <<<"$out" || fail "a changed file is named damaged: $out"
! grep -q tampered "$e/bin/php" || fail "the changed file is gone"
echo "ok: an entry with a changed file is built again"

rm "$e/lib/libphp-stand-in.so"
run 8.3 || fail "the run after a removed file"
[ "$(count)" -eq 3 ] || fail "a missing file is built again (builds: $(count))"
echo "ok: an entry with a missing file is built again"

rm "$e/.stamp"
run 8.3 || fail "the run after a removed stamp"
[ "$(count)" -eq 4 ] || fail "an entry without a stamp is built again (builds: $(count))"
echo "ok: an entry without its stamp (a build cut short) is built again"

printf '#!/bin/sh\necho 8.2.0\n' >"$e/bin/php"
(cd "$e" && find . -type f ! -name .manifest ! -name .stamp -print0 | sort -z | xargs -0 sha256sum) >"$e/.manifest"
printf '%s %s\n' "$(cut -d' ' -f1 "$e/.stamp")" "$(sha256sum <"$e/.manifest" | cut -c1-64)" >"$e/.stamp"
run 8.3 || fail "the run after a consistent forgery"
[ "$(count)" -eq 5 ] || fail "a php that does not say 8.3.0 is built again, manifest or not (builds: $(count))"
echo "ok: an entry whose php does not answer 8.3.0 is built again, even with a matching manifest"

rm -rf "$e"
if FAKE_CONFIGURE_FAILS=1 run 8.3; then fail "a failing build fails the run"; fi
[ ! -f "$e/.stamp" ] || fail "a failed build leaves no stamp"
run 8.3 || fail "the run after a failed build"
[ "$(count)" -eq 6 ] || fail "the entry of a failed build is built again (builds: $(count))"
echo "ok: what a failed build leaves is never used"

run 8.3-zts || fail "the thread-safe build"
[ "$(count)" -eq 7 ] || fail "other flags are another entry (builds: $(count))"
[ "$(entry 8.3-zts)" != "$e" ] && [ -f "$(entry 8.3)/.stamp" ] || fail "both entries are kept"
echo "ok: other flags are another entry, beside the first"

old=$(entry 8.3)
echo "# another source" >>"$src/php.ini-production"
tar -cJf "$tmp/php-8.3.0.tar.xz" -C "$tmp" php-8.3.0
run 8.3 || fail "the build of other sources"
[ "$(count)" -eq 8 ] && [ "$(entry 8.3)" != "$old" ] || fail "other sources are another entry (builds: $(count))"
[ ! -e "$old" ] && [ -d "$(entry 8.3-zts)" ] || fail "the entry of the older sources is removed, the other kind kept"
echo "ok: other sources are another entry, and the older one of that kind is removed"

chmod 0777 "$INFER_CACHE_DIR/php"
if run 8.3; then fail "a cache others can write is refused"; fi
grep -q "is not trusted" <<<"$out" || fail "the refusal says why: $out"
chmod 0755 "$INFER_CACHE_DIR/php"
echo "ok: a cache writable by others is refused"
echo "test-build-cache: all passed"
