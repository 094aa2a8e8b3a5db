"""SGLang's own detector tests, run twice: with SGLang's parsers and with chatfmt's adapters.

    bash tests/engines/sglang/setup.sh       # once: the venv (and SGLang's tests, see there)
    python tests/engines/sglang/run.py       # both passes, the per-file table, the gate
    python tests/engines/sglang/run.py -k Hermes test/registered/unit/function_call/test_hermes_detector.py

Exits 1 when a case SGLang's own parser passes fails with chatfmt's (unless listed in
``differences.txt``), then runs chatfmt's adapter tests (``test_*.py`` here) in the same venv.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _gate import cli, engine

ENGINE = engine(
    "sglang", "SGLang", "test/registered/unit/function_call", "test/registered/unit/parser"
)

if __name__ == "__main__":
    sys.exit(cli(ENGINE, __doc__ or ""))
