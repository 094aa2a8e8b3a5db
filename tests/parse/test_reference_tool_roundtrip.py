"""Every reference template whose official form renders tool calls parses its own rendered calls.

For each file in ../shared/reference/templates (resolved by ``chatfmt.get_template``: native,
recognized-native, packaged or plain Jinja), :mod:`_tool_roundtrip` renders a question and an
assistant turn with tool calls, takes what the turn adds to the generation prompt as the
model's output and parses it back with ``chatfmt.parse`` (whole, and streamed at 1, 4 and
random chunkings): the calls must come back (names, arguments as JSON). The templates that
cannot yet are listed in :data:`CANNOT_PARSE_YET` with the reason; a listed template that
starts to pass fails the test, so the list stays exact. docs/parsing.md reports the count.
"""

from __future__ import annotations

import pytest

from _parser_table import REFERENCE_BLOCK, docs_block, reference_table_markdown
from _tool_roundtrip import reference_round_trips

from _support import TEMPLATES, require_shared

#: the slow tier (`pytest -m "not slow"` leaves it out; CI runs it)
pytestmark = pytest.mark.slow

require_shared()
TRIPS = reference_round_trips(TEMPLATES)
RENDERING = sorted(name for name, rt in TRIPS.items() if rt.renders_calls)

_NO_PARSER = "Jinja only, no tool parser yet"
#: Reference templates that render tool calls but do not parse them back yet, with the reason.
CANNOT_PARSE_YET: dict[str, str] = {}


@pytest.mark.parametrize("name", RENDERING)
def test_template_parses_its_own_rendered_calls(name: str) -> None:
    rt = TRIPS[name]
    if name in CANNOT_PARSE_YET:
        assert rt.failure is not None, f"{name} parses its own calls now: drop it from the list"
        return
    assert rt.failure is None, f"{name} ({rt.template.name}): {rt.failure}\n{rt.output!r}"


def test_the_list_names_only_templates_that_render_calls() -> None:
    assert set(CANNOT_PARSE_YET) <= set(RENDERING)


def test_the_check_is_not_vacuous() -> None:
    """Native families parse (two calls), formats without calls are told apart."""
    qwen = TRIPS["Qwen-Qwen3-0.6B.jinja"]
    assert qwen.parses_own_calls and len(qwen.calls) == 2
    assert "<tool_call>" in (qwen.output or "")
    assert not TRIPS["google-gemma-2-2b-it.jinja"].renders_calls
    one = TRIPS["meta-llama-Llama-3.1-8B-Instruct.jinja"]  # one call per turn
    assert one.parses_own_calls and len(one.calls) == 1
    assert sum(rt.parses_own_calls for rt in TRIPS.values()) > 0


def test_docs_reference_table_and_count_are_current() -> None:
    assert docs_block(REFERENCE_BLOCK) == reference_table_markdown(TEMPLATES), (
        "docs/parsing.md is stale: run `python tests/_parser_table.py` to regenerate the tables"
    )
