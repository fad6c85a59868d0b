#!/usr/bin/env bash
# Run the core's Rust tests under valgrind's leak checker:
# definite leaks or invalid memory accesses fail the run. Slow (valgrind runs
# the model about 50 times slower), so tests that decode many tokens are
# limited to one representative test each. Usage: scripts/leak-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }

# test target -> test-name filter ('' = every test of the target)
declare -A FILTER=(
    [infer]=''
    [schema_errors]=''
    [schema_grammar]=''
    [sampler]=''
    [prompt_cache]='repeating_a_call_reevaluates_only_the_last_prompt_token'
    [fuzz_regressions]=''
)
mapfile -t executables < <(cargo test --release --no-default-features --features engine --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"] + " " + m["executable"])')
status=0
for entry in "${executables[@]}"; do
    name="${entry%% *}"
    exe="${entry#* }"
    [ -n "${FILTER[$name]+set}" ] || continue
    echo "== $name ${FILTER[$name]}"
    log="$(mktemp)"
    set +e
    valgrind --quiet --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
        --error-exitcode=99 "$exe" --test-threads=1 ${FILTER[$name]} >"$log" 2>&1
    code=$?
    set -e
    grep -E 'test result|ERROR SUMMARY|definitely lost|Invalid (read|write)|uninitialised' "$log" || true
    if [ "$code" -ne 0 ]; then
        echo "FAILED (exit $code), log: $log"
        status=1
    else
        rm -f "$log"
    fi
done
exit $status
