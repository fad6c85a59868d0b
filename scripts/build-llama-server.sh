#!/usr/bin/env bash
# Build llama.cpp's `llama-server`, the server the tests and benchmarks of
# Model::connect() run against, from the llama.cpp the extension itself links
# (the tree vendored in llama-cpp-sys-2): same ggml, same llama, same sampler,
# so a greedy reply through the server can be compared with the in-process
# one token for token.
#
# Fast enough for CI: the libraries llama-cpp-sys-2 already compiled for the
# extension (ggml, llama, common, cpp-httplib, and mtmd, the multimodal
# library of images in) are linked as they are, with the compile definitions
# they were built with, so only the server's own sources are compiled. The
# crate does not ship them, so they come from the llama-cpp-python sdist on
# PyPI (the same route as bench/build-llama-tools.sh).
#
# Usage: scripts/build-llama-server.sh  (after `cargo build --release`);
# the binary is target/llama-server/bin/llama-server.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/target/llama-server"
BIN="$OUT/bin/llama-server"
JOBS="$(nproc)"

if [ -x "$BIN" ]; then
    exit 0
fi

. "$ROOT/scripts/llama-sources.sh"
TREE="$LLAMA_TREE"
SDIST="$LLAMA_SDIST"
[ -f "$TREE/include/llama.h" ] || { echo "llama.cpp sources not found at $TREE" >&2; exit 1; }

# The libraries of the release build of the extension.
. "$ROOT/scripts/llama-libs.sh"

WORK="$OUT/work"
mkdir -p "$WORK" "$OUT/bin"

# The server's sources, adapted to the linked tree's API where the sdist is a
# few commits ahead of it (two renames; each edit fails loudly if its text is
# gone, so a version bump cannot half-apply them).
SERVER="$WORK/server"
rm -rf "$SERVER"
cp -r "$SDIST/tools/server" "$SERVER"
patch_source() { # file, old, new
    grep -qF "$2" "$SERVER/$1" || { echo "build-llama-server: '$2' not found in $1" >&2; exit 1; }
    python3 - "$SERVER/$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
open(path, "w").write(text.replace(old, new))
EOF
}
# mtmd_get_memory_usage() returns a struct in the linked tree, the map itself
# in the sdist.
if grep -q "std::map<ggml_backend_dev_t, size_t> backend_mem_usage;" "$TREE/tools/mtmd/mtmd.h"; then
    patch_source server-context.cpp "mtmd_get_memory_usage(mmproj_path.c_str(), mparams);" \
        "mtmd_get_memory_usage(mmproj_path.c_str(), mparams).backend_mem_usage;"
fi
if ! grep -rq "fs_open_ifstream" "$TREE/common/"; then
    if grep -q "fs_open_ifstream" "$SERVER/server-mcp.cpp"; then
        patch_source server-mcp.cpp "fs_open_ifstream(" "std::ifstream("
    fi
fi

# The web UI is left out (no npm here): the generated table of assets is empty.
GEN="$WORK/gen"
mkdir -p "$GEN"
cmake -DUI_SOURCE_DIR="$SDIST/tools/ui" -DUI_BINARY_DIR="$GEN" -DLLAMA_SOURCE_DIR="$SDIST" \
    -DLLAMA_BUILD_NUMBER=0 -DHF_BUCKET=none -DHF_VERSION= -DHF_ENABLED=OFF -DBUILD_UI=OFF \
    -DLLAMA_UI_GZIP=OFF -P "$SDIST/scripts/ui-assets.cmake" >/dev/null

# The definitions common was compiled with: its structs must read the same.
DEFINES="$(sed -n 's/^CXX_DEFINES = //p' "$LIBS/common/CMakeFiles/llama-common.dir/flags.make")"
INCLUDES=(-I"$TREE/include" -I"$TREE/ggml/include" -I"$TREE/common" -I"$TREE/vendor"
    -I"$TREE/tools/mtmd" -I"$TREE" -I"$SERVER" -I"$GEN")
CXXFLAGS=(-std=c++17 -fPIC -m64 -march=x86-64 -w -DNDEBUG $DEFINES "${INCLUDES[@]}")

# mtmd: the library the extension's build compiled (its feature `mtmd`, for
# images in), the same code the extension runs; else its sources, compiled
# here (the CMakeLists' list).
MTMD_LIB="$LIBS/tools/mtmd/libmtmd.a"
MTMD_SOURCES=()
if [ ! -f "$MTMD_LIB" ]; then
    MTMD_LIB=""
    while read -r file; do
        MTMD_SOURCES+=("$TREE/tools/mtmd/$file")
    done < <(sed -n '/^add_library(mtmd$/,/)/p' "$TREE/tools/mtmd/CMakeLists.txt" | grep -oE '[A-Za-z0-9_./-]+\.cpp')
fi
SERVER_SOURCES=("$SERVER"/server*.cpp "$SERVER/main.cpp" "$GEN/ui.cpp")

# Objects are kept between runs (a failed unit leaves none), so a rerun
# compiles only what is missing.
OBJ="$WORK/obj"
mkdir -p "$OBJ"
# One line per object: optimisation, source.
{
    for src in "${MTMD_SOURCES[@]}"; do echo "-O2 $src"; done
    for src in "${SERVER_SOURCES[@]}"; do echo "-O2 $src"; done
} > "$WORK/units"
echo "Compiling llama-server ($(wc -l < "$WORK/units") units, $JOBS at a time)"
export OBJ
export CXXFLAGS_LINE="${CXXFLAGS[*]}"
xargs -P "$JOBS" -L 1 bash -c 'set -e; opt="$0"; src="$1"; obj="$OBJ/$(echo "$src" | md5sum | cut -c1-12)-$(basename "$src" .cpp).o"; [ -f "$obj" ] && exit 0; $CXX $opt $CXXFLAGS_LINE -c "$src" -o "$obj.tmp"; mv "$obj.tmp" "$obj"' < "$WORK/units"

g++ -o "$BIN.tmp" "$OBJ"/*.o -Wl,--start-group $MTMD_LIB "${LINK_LIBS[@]}" \
    -Wl,--end-group -lssl -lcrypto -lpthread -ldl -lm
mv "$BIN.tmp" "$BIN"
echo "Built $BIN"
