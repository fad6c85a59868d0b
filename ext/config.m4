dnl The infer extension is written in Rust: `phpize && ./configure && make &&
dnl make install` (what PIE runs for a source build, in this directory: the
dnl package's build-path) builds it with cargo from the crate one directory up
dnl and installs modules/infer.so into the PHP's extension directory.
dnl
dnl Needs: cargo (https://rustup.rs), cmake and a C++ compiler (llama.cpp),
dnl clang's libclang (bindgen reads PHP's headers). --with-php-config picks
dnl the PHP to build for, as for any extension.

PHP_ARG_ENABLE([infer],
  [whether to enable infer (local GGUF models through llama.cpp)],
  [AS_HELP_STRING([--enable-infer], [Enable the infer extension (default: yes)])],
  [yes], [no])

if test "$PHP_INFER" != "no"; then
  AC_PATH_PROG([CARGO], [cargo], [no], [$PATH:$HOME/.cargo/bin])
  if test "$CARGO" = "no"; then
    AC_MSG_ERROR([cargo was not found: the extension is written in Rust; install it from https://rustup.rs])
  fi
  AC_PATH_PROG([CMAKE], [cmake], [no])
  if test "$CMAKE" = "no"; then
    AC_MSG_ERROR([cmake was not found: it builds llama.cpp (Debian: apt-get install cmake)])
  fi

  dnl Both are built and tested (docs/production.md, thread-safe PHP):
  dnl ext-php-rs generates the bindings for the PHP that php-config names.
  AC_MSG_CHECKING([whether PHP is thread-safe (ZTS)])
  infer_php_config_h="`$PHP_CONFIG --include-dir`/main/php_config.h"
  if grep -q '^#define ZTS 1' "$infer_php_config_h" 2>/dev/null; then
    AC_MSG_RESULT([yes])
  else
    AC_MSG_RESULT([no])
  fi

  dnl The crate's root, and where cargo builds (INFER_CARGO_TARGET_DIR in
  dnl configure's environment chooses another place, to share a build).
  INFER_CRATE_DIR="`cd "$abs_srcdir/.." && pwd`"
  if test ! -f "$INFER_CRATE_DIR/Cargo.toml"; then
    AC_MSG_ERROR([Cargo.toml not found in $INFER_CRATE_DIR: run phpize in the ext/ directory of the infer source tree])
  fi
  INFER_BUILD_DIR="`pwd`"
  dnl ext-php-rs wants php-config by its path.
  INFER_PHP_CONFIG="`command -v "$PHP_CONFIG"`"
  if test -z "$INFER_PHP_CONFIG"; then
    AC_MSG_ERROR([$PHP_CONFIG not found])
  fi
  PHP_MODULES='$(phplibdir)/infer.so'
  PHP_SUBST([CARGO])
  PHP_SUBST([INFER_PHP_CONFIG])
  PHP_SUBST([INFER_CRATE_DIR])
  INFER_CARGO_TARGET_DIR="${INFER_CARGO_TARGET_DIR:-$INFER_BUILD_DIR/cargo-target}"
  PHP_SUBST([INFER_CARGO_TARGET_DIR])
  PHP_ADD_BUILD_DIR([$abs_builddir/modules])
  PHP_ADD_MAKEFILE_FRAGMENT([$abs_srcdir/Makefile.frag], [$abs_srcdir], [$abs_builddir])
fi
