# Sourced by the scripts that run the project's Python converters
# (fetch-embedding-model.sh, make-test-asset.sh): `venv_convert ROOT`
# makes (once) the virtualenv target/venv-convert with the converters'
# packages, each pinned (with what they pull in), and sets `venv` to it.
# Expects retry.sh sourced.
venv_convert() {
    venv="$1/target/venv-convert"
    local pins=(
        gguf==0.19.0 numpy==2.4.6 safetensors==0.8.0 tokenizers==0.23.3
        PyYAML==6.0.4 tqdm==4.70.1 requests==2.34.2 certifi==2026.10.19.post1
        charset-normalizer==3.5.3 idna==3.20 urllib3==2.8.0
        huggingface_hub==2.4.0 anyio==4.16.0 click==8.5.1 filelock==4.3.1
        fsspec==2026.9.0 h11==0.16.0 hf-xet==1.8.0 httpcore2==2.16.2
        httpx2==2.16.2 packaging==26.4 truststore==0.10.5 typing_extensions==4.16.0
    )
    if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.pins" 2>/dev/null)" != "${pins[*]}" ]; then
        echo "Creating the converter's virtualenv in $venv..."
        rm -rf "$venv"
        python3 -m venv "$venv" || {
            echo "error: python3 -m venv failed; install python3-venv (make deps does)" >&2
            exit 1
        }
        retry 3 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
        echo "${pins[*]}" > "$venv/.pins"
    fi
}
