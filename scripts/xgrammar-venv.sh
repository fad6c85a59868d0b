#!/usr/bin/env bash
# A Python virtualenv with xgrammar, the grammar engine vLLM and SGLang use,
# for tests/xgrammar_dialect.rs: it judges the grammars Model::connect()
# sends to those engines with xgrammar's own parser and matcher.
#
# Only xgrammar's grammar side is used, which needs none of torch,
# transformers or triton (its wheel requires them for the GPU matcher and the
# tokenizer import): they are installed as empty stand-in modules, so the
# virtualenv is ~130 MB instead of several GB. Prints the Python to run.
set -euo pipefail
. "$(dirname "$0")/retry.sh"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/target/xgrammar-venv"
STUBS="$VENV/stubs"

if [ ! -x "$VENV/bin/python" ] || ! PYTHONPATH="$STUBS" "$VENV/bin/python" -c 'import xgrammar' >/dev/null 2>&1; then
    rm -rf "$VENV"
    python3 -m venv "$VENV" >&2
    retry 3 "$VENV/bin/pip" install -q apache-tvm-ffi==0.1.15.post2 pydantic==2.14.4 numpy==2.4.6 \
        typing_extensions==4.16.0 >&2
    # Last, without its GPU dependencies, which are stand-ins (below): pip
    # would report them missing as an "ERROR" line that is no error.
    retry 3 "$VENV/bin/pip" install -q --no-deps --no-warn-conflicts xgrammar==0.2.9 >&2
    for module in torch transformers triton; do
        mkdir -p "$STUBS/$module"
        cat > "$STUBS/$module/__init__.py" <<'PY'
# Stand-in: xgrammar imports this module at load time; its grammar parser and
# matcher never use it. Any attribute is a class whose attributes are classes
# and whose calls return False (torch.cuda.is_available() is False).
class _Meta(type):
    def __getattr__(cls, name):
        return _make(name)
    def __call__(cls, *args, **kwargs):
        return False
def _make(name):
    return _Meta(name, (), {})
def __getattr__(name):
    return _make(name)
__version__ = "0.0"
PY
    done
    PYTHONPATH="$STUBS" "$VENV/bin/python" -c 'import xgrammar' >&2
fi
echo "$VENV/bin/python"
