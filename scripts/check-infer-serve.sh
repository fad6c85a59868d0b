#!/usr/bin/env bash
# check-infer-serve.sh PATH: the shared server's supervisor at PATH is an
# executable that runs here and, given no arguments, refuses to start with
# its usage (what test-phpize.sh and test-dist.sh ask of the copy they
# installed or unpacked).
set -euo pipefail
serve=$1
[ -x "$serve" ] || { echo "error: $serve is not an executable file" >&2; exit 1; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT
if "$serve" >/dev/null 2>"$err"; then
    echo "error: $serve without arguments should refuse to start" >&2
    exit 1
fi
grep -q usage "$err" || { echo "error: $serve answered: $(cat "$err")" >&2; exit 1; }
