#!/usr/bin/env bash
# Make the TEST-ONLY image projector of the vision tests: a hand-set
# LLaVA-type projector for SmolLM2-135M-Instruct that turns pure red, green
# and blue 14x14 patches into the model's own embeddings of " red", " green"
# and " blue" (scripts/make-colour-mmproj.py says how). No real vision model
# can be fetched here, so it is made from the text model, in the converter's
# pinned virtualenv (the one scripts/fetch-embedding-model.sh makes), checked
# against its sha256 and saved under models/ (git-ignored). Does nothing when
# the checked file is there. The Makefile passes DEST, the one place that
# names it.
#
#   make-vision-model.sh DEST [TEXT_MODEL]   (TEXT_MODEL: the default model's
#                                             GGUF, make model fetches it)
set -euo pipefail
. "$(dirname "$0")/retry.sh"
. "$(dirname "$0")/venv-convert.sh"

usage="usage: make-vision-model.sh DEST [TEXT_MODEL] (make vision-model passes them)"
dest="${1:?$usage}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
text_model="${2:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
# Made from SmolLM2-135M-Instruct.Q4_1.gguf (sha256 b179c952...): another
# text model gives other bytes.
sha256="2aa2d4b29302c790413d1bc3ac56ff096c9d0ee605a4f50a05d9a1e799fd5f2f"

check() { echo "$sha256  $1" | sha256sum --check --status; }

if [ -f "$dest" ] && check "$dest"; then
    exit 0
fi
if [ ! -f "$text_model" ]; then
    echo "error: text model $text_model not found (make model fetches it)" >&2
    exit 1
fi

# The converter's virtualenv (the one scripts/fetch-embedding-model.sh uses).
venv_convert "$root"

mkdir -p "$(dirname "$dest")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "Making the test image projector from $text_model..."
"$venv/bin/python" "$root/scripts/make-colour-mmproj.py" "$text_model" "$tmp/mmproj.gguf"
if ! check "$tmp/mmproj.gguf"; then
    echo "error: sha256 of the made projector ($(sha256sum "$tmp/mmproj.gguf" | cut -d' ' -f1)) does not match $sha256" >&2
    exit 1
fi
mv "$tmp/mmproj.gguf" "$dest"
echo "Projector saved to $dest"
