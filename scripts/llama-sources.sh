# Sourced by bench/build-llama-tools.sh and scripts/build-llama-server.sh:
# where llama.cpp's sources are. Expects ROOT (the repository).
#   LLAMA_TREE   the tree vendored in llama-cpp-sys-2, which the extension links
#                (it ships the libraries' sources but not the tools' or the server's);
#   LLAMA_SDIST  the llama-cpp-python sdist's full llama.cpp tree, from PyPI,
#                fetched once into target/llama-sdist for both scripts.
SDIST_VERSION=0.3.36

LLAMA_TREE="$(cargo metadata --format-version 1 --manifest-path "$ROOT/Cargo.toml" \
    | python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="llama-cpp-sys-2"))')"
LLAMA_TREE="$(dirname "$LLAMA_TREE")/llama.cpp"
[ -f "$LLAMA_TREE/CMakeLists.txt" ] || { echo "llama.cpp sources not found at $LLAMA_TREE" >&2; exit 1; }

SDIST_DIR="$ROOT/target/llama-sdist"
if [ ! -d "$SDIST_DIR/llama_cpp_python-$SDIST_VERSION" ]; then
    echo "Fetching the llama-cpp-python $SDIST_VERSION sdist for llama.cpp's tools and server sources"
    mkdir -p "$SDIST_DIR"
    . "$ROOT/scripts/retry.sh"
    retry 3 python3 -m pip download -q --no-cache-dir --no-deps --no-binary :all: "llama-cpp-python==$SDIST_VERSION" -d "$SDIST_DIR"
    tar -xzf "$SDIST_DIR/llama_cpp_python-$SDIST_VERSION.tar.gz" -C "$SDIST_DIR"
fi
LLAMA_SDIST="$SDIST_DIR/llama_cpp_python-$SDIST_VERSION/vendor/llama.cpp"
