#!/usr/bin/env bash
# Build llama.cpp's `llama-mtmd-cli`, the independent judge of image input:
# the same model, projector and image through llama.cpp's own multimodal CLI,
# from the llama.cpp the extension itself links (the tree vendored in
# llama-cpp-sys-2: same ggml, llama and mtmd), so its greedy answer can be
# compared with the extension's.
#
# Fast: like scripts/build-llama-server.sh it links the static libraries the
# release build of the extension already compiled (ggml, llama, common and,
# with the crate feature `mtmd`, libmtmd), with the compile definitions they
# were built with, and compiles only the CLI's one source file, which the
# crate's tree ships (tools/mtmd/mtmd-cli.cpp). A build without libmtmd (an
# older one, without the feature) gets mtmd compiled here from the same tree,
# -O3, the sources its CMakeLists lists.
#
# Usage: scripts/build-llama-mtmd-cli.sh  (after `cargo build --release`);
# the binary is target/llama-server/bin/llama-mtmd-cli. Does nothing when it
# is there.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/target/llama-server"
BIN="$OUT/bin/llama-mtmd-cli"
JOBS="$(nproc)"

if [ -x "$BIN" ]; then
    exit 0
fi

# The libraries of the release build of the extension.
. "$ROOT/scripts/llama-libs.sh"

# The tree they were compiled from (vendored in llama-cpp-sys-2), which ships
# the CLI's source.
TREE="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$LIBS/CMakeCache.txt")"
[ -f "$TREE/include/llama.h" ] || { echo "build-llama-mtmd-cli: llama.cpp sources not found at '$TREE'" >&2; exit 1; }
CLI_SOURCE="$TREE/tools/mtmd/mtmd-cli.cpp"
[ -f "$CLI_SOURCE" ] || { echo "build-llama-mtmd-cli: $CLI_SOURCE not found" >&2; exit 1; }

WORK="$OUT/work-mtmd-cli"
OBJ="$WORK/obj"
mkdir -p "$OBJ" "$OUT/bin"

# The definitions common was compiled with: its structs (common_params, read
# by the CLI) must have the same layout.
DEFINES="$(sed -n 's/^CXX_DEFINES = //p' "$LIBS/common/CMakeFiles/llama-common.dir/flags.make")"
INCLUDES=(-I"$TREE/include" -I"$TREE/ggml/include" -I"$TREE/common" -I"$TREE/vendor"
    -I"$TREE/tools/mtmd" -I"$TREE")
CXXFLAGS=(-std=c++17 -fPIC -m64 -march=x86-64 -w -DNDEBUG "${INCLUDES[@]}")

# One line per unit: optimisation, defines, source. Objects are kept between
# runs (a failed unit leaves none), so a rerun compiles only what is missing.
MTMD_LIB="$LIBS/tools/mtmd/libmtmd.a"
{
    echo "-O2|$DEFINES|$CLI_SOURCE"
    if [ ! -f "$MTMD_LIB" ]; then
        MTMD_LIB=""
        # mtmd's own definitions, when cmake configured it; else common's.
        mtmd_flags="$LIBS/tools/mtmd/CMakeFiles/mtmd.dir/flags.make"
        mtmd_defines="$DEFINES"
        if [ -f "$mtmd_flags" ]; then
            mtmd_defines="$(sed -n 's/^CXX_DEFINES = //p' "$mtmd_flags")"
        fi
        sed -n '/^add_library(mtmd$/,/)/p' "$TREE/tools/mtmd/CMakeLists.txt" \
            | grep -oE '[A-Za-z0-9_./-]+\.cpp' \
            | while read -r file; do echo "-O3|$mtmd_defines|$TREE/tools/mtmd/$file"; done
    fi
} > "$WORK/units"
[ -n "$MTMD_LIB" ] || echo "build-llama-mtmd-cli: no libmtmd.a in $LIBS, compiling mtmd too"
echo "Compiling llama-mtmd-cli ($(wc -l < "$WORK/units") units, $JOBS at a time)"
export OBJ
export CXXFLAGS_LINE="${CXXFLAGS[*]}"
tr '\n' '\0' < "$WORK/units" | xargs -0 -P "$JOBS" -n 1 bash -c '
    set -e
    IFS="|" read -r opt defines src <<< "$0"
    obj="$OBJ/$(echo "$src" | md5sum | cut -c1-12)-$(basename "$src" .cpp).o"
    [ -f "$obj" ] && exit 0
    $CXX $opt $CXXFLAGS_LINE $defines -c "$src" -o "$obj.tmp"
    mv "$obj.tmp" "$obj"'

g++ -o "$BIN.tmp" "$OBJ"/*.o -Wl,--start-group ${MTMD_LIB:+"$MTMD_LIB"} "${LINK_LIBS[@]}" \
    -Wl,--end-group -lssl -lcrypto -lpthread -ldl -lm
mv "$BIN.tmp" "$BIN"
echo "Built $BIN"
