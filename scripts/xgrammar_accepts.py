"""Which texts xgrammar's grammar matcher accepts.

Reads JSON lines {"grammar": "<EBNF>", "texts": ["...", ...]} on stdin and
writes, for each, {"accepts": [true, false, ...]} or {"error": "<why the
grammar was refused>"} on stdout. Run with scripts/xgrammar-venv.sh's Python
and its stubs directory on PYTHONPATH.
"""

import json
import sys

import xgrammar
from xgrammar.testing import _is_grammar_accept_string


def main() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        try:
            grammar = xgrammar.Grammar.from_ebnf(job["grammar"])
            accepts = [_is_grammar_accept_string(grammar, text) for text in job["texts"]]
            answer = {"accepts": accepts}
        except Exception as e:  # xgrammar raises its own error types
            answer = {"error": str(e)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
