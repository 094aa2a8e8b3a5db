"""LFM2 / LFM2.5: pythonic calls in ``<|tool_call_start|>[…]<|tool_call_end|>`` blocks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.pythonic import Pythonic, PythonicParser
from ...parsing.states import State
from .markers import TOOL_CALL_END, TOOL_CALL_START


class LFM2Parser(PythonicParser):
    """LFM2 / LFM2.5: ``<|tool_call_start|>[f(a=1)]<|tool_call_end|>`` (pythonic or JSON inside)."""

    name = "lfm2"
    special_markers: ClassVar[tuple[str, ...]] = (TOOL_CALL_START, TOOL_CALL_END)
    starts: ClassVar[Mapping[str, State]] = {TOOL_CALL_START: Pythonic.PY_BLOCK}
    ends: ClassVar[Mapping[str, str | None]] = {TOOL_CALL_START: TOOL_CALL_END}
