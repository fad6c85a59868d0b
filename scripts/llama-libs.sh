# Sourced by the scripts that build llama.cpp's tools against the libraries
# the extension's release build compiled (build-llama-server.sh,
# build-llama-mtmd-cli.sh): sets LIBS to that build's CMake directory (the
# newest, should there be more than one build of llama-cpp-sys-2), and
# LINK_LIBS to the libraries both link, in one group, and CXX to the
# compiler of their own sources. Expects ROOT (the repository).
LIBS=""
for lib in $(ls -t "$ROOT"/target/release/build/llama-cpp-sys-2-*/out/build/src/libllama.a 2>/dev/null); do
    dir="$(dirname "$(dirname "$lib")")"
    if [ -f "$dir/common/libllama-common.a" ] && [ -f "$dir/CMakeCache.txt" ]; then
        LIBS="$dir"
        break
    fi
done
[ -n "$LIBS" ] || { echo "$(basename "$0"): llama.cpp libraries not found: run 'cargo build --release' first" >&2; exit 1; }
LINK_LIBS=("$LIBS/common/libllama-common.a" "$LIBS/common/libllama-common-base.a"
    "$LIBS/vendor/cpp-httplib/libcpp-httplib.a" "$LIBS/vendor/hash/libvendor-hash.a"
    "$LIBS/src/libllama.a" "$LIBS/ggml/src/libggml.a" "$LIBS/ggml/src/libggml-cpu.a"
    "$LIBS/ggml/src/libggml-base.a")
# Their own sources compile through ccache when it is there
# (scripts/install-deps.sh installs it): a second checkout takes these
# objects by content hash. Paths under the checkout are hashed relative to it
# (CCACHE_BASEDIR), so its place does not matter.
CXX=g++
if command -v ccache >/dev/null 2>&1; then
    CXX="ccache g++"
    export CCACHE_BASEDIR="$ROOT"
fi
export CXX
