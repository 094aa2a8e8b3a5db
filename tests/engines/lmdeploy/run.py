"""LMDeploy's own parser tests, run twice: with LMDeploy's parsers and with chatfmt's adapters.

    bash tests/engines/lmdeploy/setup.sh       # once: the venv (and LMDeploy's tests, see there)
    python tests/engines/lmdeploy/run.py       # both passes, the per-file table, the gate
    python tests/engines/lmdeploy/run.py -k llama3 tests/test_lmdeploy/serve/parsers/test_llama3_parser.py

Exits 1 when a case LMDeploy's own parser passes fails with chatfmt's (unless listed in
``differences.txt``), then runs chatfmt's adapter tests (``test_*.py`` here) in the same venv.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _gate import cli, engine

ENGINE = engine("lmdeploy", "LMDeploy", "tests/test_lmdeploy/serve/parsers")

if __name__ == "__main__":
    sys.exit(cli(ENGINE, __doc__ or ""))
