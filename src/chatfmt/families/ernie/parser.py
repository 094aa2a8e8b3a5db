"""Baidu ERNIE 4.5: ``<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`` calls and
reasoning that the output starts inside (the model opens it itself, as vLLM's parser reads
it) and ``</think>`` closes, the
answer optionally wrapped in ``<response>…</response>`` (vLLM's ``ernie45`` parsers)."""

from __future__ import annotations

from typing import ClassVar

from ...parsing.reasoning import ThinkParser
from ...parsing.states import State
from ..granite.parser import GraniteThinkParser, _GraniteThink
from ..hermes.parser import HermesParser
from .markers import RESPONSE


class Ernie45Parser(HermesParser):
    """ERNIE 4.5's calls: Hermes-style JSON call objects in ``<tool_call>`` blocks."""

    name = "ernie45"


class Ernie45ThinkParser(GraniteThinkParser):
    """ERNIE 4.5 Thinking: ``reasoning</think>`` (the output starts inside the block, with or
    without a template; ``thinking_prefilled=False`` reads a leading ``<think>`` instead), then
    the answer — bare or in ``<response>…</response>``, whose tags are markup."""

    name = "ernie45"
    starts_inside = True
    openers: ClassVar[tuple[tuple[str, State], ...]] = (
        *ThinkParser.openers,
        (RESPONSE, _GraniteThink.RESPONSE_LEAD),
    )


__all__ = ["Ernie45Parser", "Ernie45ThinkParser"]
