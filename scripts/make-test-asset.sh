#!/usr/bin/env bash
# Make a TEST-ONLY asset that no registry has from the default model's own
# weights, with a generator script of scripts/ run in the converter's pinned
# virtualenv (the one scripts/fetch-embedding-model.sh makes), check it
# against its sha256 and save it under models/ (git-ignored). Does nothing
# when the checked file is there. The Makefile passes every argument: it is
# the one place that names the assets.
#
#   make-test-asset.sh GENERATOR SHA256 DEST TEXT_MODEL
#
# The assets (see each generator's own documentation):
#   make-colour-mmproj.py  the image projector of the vision tests (make vision-model)
#   make-test-lora.py      the LoRA adapter of the sampling tests (make lora-model)
# Both are made from SmolLM2-135M-Instruct.Q4_1.gguf (sha256 b179c952...):
# another text model gives other bytes.
set -euo pipefail
. "$(dirname "$0")/retry.sh"
. "$(dirname "$0")/venv-convert.sh"

usage="usage: make-test-asset.sh GENERATOR SHA256 DEST TEXT_MODEL (the Makefile passes them)"
generator="${1:?$usage}"
sha256="${2:?$usage}"
dest="${3:?$usage}"
text_model="${4:?$usage}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

check() { echo "$sha256  $1" | sha256sum --check --status; }

if [ -f "$dest" ] && check "$dest"; then
    exit 0
fi
if [ ! -f "$text_model" ]; then
    echo "error: text model $text_model not found (make model fetches it)" >&2
    exit 1
fi

venv_convert "$root"

mkdir -p "$(dirname "$dest")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "Making $(basename "$dest") from $text_model with $generator..."
"$venv/bin/python" "$root/scripts/$generator" "$text_model" "$tmp/asset.gguf"
if ! check "$tmp/asset.gguf"; then
    echo "error: sha256 of the made $(basename "$dest") ($(sha256sum "$tmp/asset.gguf" | cut -d' ' -f1)) does not match $sha256" >&2
    exit 1
fi
mv "$tmp/asset.gguf" "$dest"
echo "Saved to $dest"
