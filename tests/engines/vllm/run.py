"""vLLM's own parser tests, run twice: with vLLM's parsers and with chatfmt's adapters.

    bash tests/engines/vllm/setup.sh        # once: the venv and vLLM's tests
    python tests/engines/vllm/run.py        # both passes, the table, the gate
    python tests/engines/vllm/run.py -k hermes tests/tool_parsers/test_hermes_tool_parser.py

Prints one row per test file (passed / failed / skipped with each parser; cases only chatfmt
fails; cases only chatfmt passes) and exits 1 when a case vLLM's own parser passes fails with
chatfmt's (the gate), unless the case is listed in ``differences.txt`` with its reason. Then
runs chatfmt's own adapter tests (``test_adapter_*.py``) in the same environment.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _gate import cli, engine

ENGINE = engine(
    "vllm",
    "vLLM",
    "tests/tool_parsers",
    "tests/reasoning",
    ini="asyncio_default_fixture_loop_scope = function",
    required=True,  # setup.sh takes them from vLLM's source distribution
)

if __name__ == "__main__":
    sys.exit(cli(ENGINE, __doc__ or ""))
