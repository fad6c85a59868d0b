#!/usr/bin/env bash
# Run one part of `make test` and record what it cost: its output passes
# through unchanged, and a line "part<TAB>seconds<TAB>tests<TAB>failures<TAB>exit"
# is appended to target/test-parts.tsv (scripts/test-times.py reads it, and
# `make test` prints it as its last lines); the output is kept in
# target/test-logs/ (the Rust test binaries' times are read from there). The
# counts are read from the output: cargo's "test result:" lines, PHPUnit's
# last summary line. Outside `make test` (INFER_TIMING unset: make demo,
# make build alone) the command only runs.
# Usage: scripts/timed.sh PART COMMAND [ARGS...]
set -uo pipefail
part=${1:?usage: timed.sh PART COMMAND [ARGS...]}
shift
if [ -z "${INFER_TIMING:-}" ]; then
    exec "$@"
fi
mkdir -p target/test-logs
out=target/test-logs/$(printf '%s' "$part" | tr -c 'A-Za-z0-9.-' '_').log
start=$(date +%s%N)
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
ms=$((($(date +%s%N) - start) / 1000000))
read -r tests failures < <(python3 - "$out" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
tests = failures = 0
for m in re.finditer(r"test result: \w+\. (\d+) passed; (\d+) failed", text):
    tests += int(m.group(1)) + int(m.group(2))
    failures += int(m.group(2))
# The scripts' tests: a line "ok: …" per check, "FAILED" on the first that fails.
tests += len(re.findall(r"^ok: ", text, re.M))
if re.search(r"^test-[a-z-]+: FAILED", text, re.M):
    tests += 1
    failures += 1
ok = re.findall(r"^OK \((\d+) tests?, ", text, re.M)
bad = re.findall(r"^Tests: (\d+), Assertions: \d+(.*)$", text, re.M)
if ok:
    tests += int(ok[-1])
elif bad:
    tests += int(bad[-1][0])
    failures += sum(int(n) for n in re.findall(r"(?:Errors|Failures): (\d+)", bad[-1][1]))
print(tests, failures)
PY
)
printf '%s\t%d.%03d\t%s\t%s\t%d\n' "$part" $((ms / 1000)) $((ms % 1000)) "${tests:-0}" "${failures:-0}" "$rc" >> target/test-parts.tsv
# A part that failed ends `make test` here: say what ran so far.
if [ "$rc" -ne 0 ]; then
    python3 "$(dirname "$0")/test-times.py" || true
fi
exit "$rc"
