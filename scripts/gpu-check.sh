#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (never CI, which has none): build the
# `cuda` variant, run the PHP suites that generate with every layer offloaded,
# and compare decode and prefill with llama.cpp's own llama-bench built with
# CUDA from the same sources, in the same run (goal: both >= 0.95x). Prints the
# figures for BENCHMARKS.md.
#
#   bash scripts/gpu-check.sh            (about 15 minutes from a cold target/)
set -euo pipefail
cd "$(dirname "$0")/.."

nvidia-smi -L || { echo "gpu-check: no NVIDIA GPU here (nvidia-smi failed)" >&2; exit 2; }
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || { echo "gpu-check: the CUDA toolkit (nvcc) is needed to build the cuda variant" >&2; exit 2; }

date -u +"gpu-check on %Y-%m-%d %H:%M UTC"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

make build model GPU=cuda
EXT="$PWD/target/release/libinfer.so"
export INFER_MODEL="$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf" INFER_EXTENSION="$EXT"
php -d extension="$EXT" -i | grep 'compiled backends'

# The suites that generate, with the default model's layers on the GPU.
INFER_TEST_GPU_LAYERS=99 php -d extension="$EXT" "$(command -v phpunit || echo /usr/bin/phpunit)" -c phpunit.xml.dist \
    --filter 'DevicesTest|GenerationTest|StructuredOutputTest|SchemaTest|StreamTest|ChatManyTest|ResponseTest'

# llama-bench with CUDA, from the sources the extension links.
LLAMA_TOOLS_OUT="$PWD/target/llama-tools-cuda" LLAMA_TOOLS_CMAKE_FLAGS="-DGGML_CUDA=ON" bash bench/build-llama-tools.sh
php -d extension="$EXT" bench/gpu.php "$INFER_MODEL" target/llama-tools-cuda/bin --runs 5
