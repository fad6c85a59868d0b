#!/usr/bin/env bash
# Build llama.cpp's own `llama-completion` and `llama-bench`, the baselines of
# bench/perf.php, and the other tools below, from the llama.cpp sources the
# extension links against (the tree vendored in the llama-cpp-sys-2 crate).
# That crate ships the libraries but not the tools' sources, so those come from the
# llama-cpp-python sdist on PyPI, which carries the full tree. Same flags as the
# extension's build (llama-cpp-sys-2's defaults): GGML_NATIVE off, so ggml's
# portable x86 set (SSE4.2, AVX, AVX2, BMI2, FMA, F16C), and no OpenMP.
# (GGML_NATIVE=ON would also compile AMX kernels, which die with SIGILL where
# the kernel does not grant AMX state, as in this sandbox.)
# Outside the normal build and CI; `make bench` runs it once.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# LLAMA_TOOLS_OUT and LLAMA_TOOLS_CMAKE_FLAGS build a variant elsewhere
# (scripts/gpu-check.sh: -DGGML_CUDA=ON into target/llama-tools-cuda).
OUT="${LLAMA_TOOLS_OUT:-$ROOT/target/llama-tools}"
EXTRA_FLAGS=(${LLAMA_TOOLS_CMAKE_FLAGS:-})

if [ -x "$OUT/bin/llama-completion" ] && [ -x "$OUT/bin/llama-bench" ] && [ -x "$OUT/bin/llama-batched-bench" ] \
    && [ -x "$OUT/bin/llama-embedding" ] && [ -x "$OUT/bin/llama-lookup" ]; then
    exit 0
fi

. "$ROOT/scripts/llama-sources.sh"
SYS="$LLAMA_TREE"
SDIST="$LLAMA_SDIST"
WORK="$OUT/work"
mkdir -p "$WORK"

# The linked tree, with the two tools' sources laid over it.
rm -rf "$WORK/llama.cpp"
cp -r "$SYS" "$WORK/llama.cpp"
# llama-batched-bench (the baseline of bench/chat_many.php) is under tools/ in
# recent trees and under examples/ in older ones.
# llama-embedding (the baseline of bench/embeddings.php) is under examples/.
# llama-lookup (prompt-lookup decoding from an n-gram cache, common/ngram-cache)
# is under examples/.
for tool in completion llama-bench batched-bench embedding lookup; do
    src="$SDIST/tools/$tool"
    [ -d "$src" ] || src="$SDIST/examples/$tool"
    rm -rf "$WORK/llama.cpp/tools/$tool"
    cp -r "$src" "$WORK/llama.cpp/tools/$tool"
done
# examples/lookup's CMakeLists also defines llama-lookup-create, -merge and
# -stats; only llama-lookup's block is kept.
LOOKUP_CMAKE="$WORK/llama.cpp/tools/lookup/CMakeLists.txt"
LOOKUP_BLOCK="$(sed -n '/^set(TARGET llama-lookup)$/,/^$/p' "$LOOKUP_CMAKE")"
grep -qF 'add_executable(${TARGET} lookup.cpp)' <<<"$LOOKUP_BLOCK" \
    || { echo "build-llama-tools: llama-lookup's target not found in $LOOKUP_CMAKE" >&2; exit 1; }
printf '%s\n' "$LOOKUP_BLOCK" > "$LOOKUP_CMAKE"
# Only those five tools are configured.
printf 'add_subdirectory(completion)\nadd_subdirectory(llama-bench)\nadd_subdirectory(batched-bench)\nadd_subdirectory(embedding)\nadd_subdirectory(lookup)\n' > "$WORK/llama.cpp/tools/CMakeLists.txt"

cmake -S "$WORK/llama.cpp" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_COMMON=ON ${EXTRA_FLAGS[@]+"${EXTRA_FLAGS[@]}"} >/dev/null
cmake --build "$WORK/build" --config Release -j "$(nproc)" --target llama-completion llama-bench llama-batched-bench llama-embedding \
    llama-lookup
mkdir -p "$OUT/bin"
cp "$WORK/build/bin/llama-completion" "$WORK/build/bin/llama-bench" "$WORK/build/bin/llama-batched-bench" \
    "$WORK/build/bin/llama-embedding" "$WORK/build/bin/llama-lookup" "$OUT/bin/"
echo "Built llama-completion, llama-bench, llama-batched-bench, llama-embedding and llama-lookup in $OUT/bin"
