"""ServiceNow Apriel 1.5 / 1.6 Thinker.

The model writes ``Here are my reasoning steps:`` (Apriel 1.6's generation prompt
already holds it), its reasoning, ``[BEGIN FINAL RESPONSE]``, the answer, and on
1.5 ``[END FINAL RESPONSE]``; calls are a JSON list
``<tool_calls>[{"name": …, "arguments": {…}}, …]</tool_calls>`` (an ``"id"`` member
is ignored). The ``[BEGIN/END FINAL RESPONSE]`` markers are markup, also without
the reasoning parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.base import WS
from ...parsing.blocks import Block, BlockParser
from ...parsing.reasoning import Think, ThinkParser
from ...parsing.states import State
from .markers import (
    BEGIN_FINAL_RESPONSE,
    END_FINAL_RESPONSE,
    HERE_ARE_MY_REASONING_STEPS,
    TOOL_CALLS,
    TOOL_CALLS_CLOSE,
)

_HEAD = HERE_ARE_MY_REASONING_STEPS
_BEGIN, _END = BEGIN_FINAL_RESPONSE, END_FINAL_RESPONSE


class _Apriel(State):
    """States of :class:`AprielParser` beyond :class:`~.blocks.Block`."""

    LEAD = auto()  # whitespace after a final-response marker


class AprielParser(BlockParser):
    """``<tool_calls>[…]</tool_calls>``; the final-response markers are dropped, with the
    whitespace next to them: trailing whitespace of the text is held until what follows it
    decides."""

    states = _Apriel

    name = "apriel"
    special_markers = (TOOL_CALLS, TOOL_CALLS_CLOSE)
    starts: ClassVar[Mapping[str, State]] = {
        TOOL_CALLS: Block.GAP,
        _BEGIN: _Apriel.LEAD,
        _END: _Apriel.LEAD,
    }
    end = TOOL_CALLS_CLOSE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ws = ""  # held trailing whitespace of the text

    def _s_text(self) -> bool:
        end, marker, resume = self.text_markers.split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        text = self._ws + self.buf[self.pos : end]
        self.pos = resume
        if marker is None and not self.final:
            body = text.rstrip(WS)
            self._ws = text[len(body) :]
            self.out.content(body)
            return False
        self._ws = ""
        # Whitespace before a final-response marker is markup; before <tool_calls> the
        # emitter decides (the template's own separator is not content).
        self.out.content(text if marker is None or marker == TOOL_CALLS else text.rstrip(WS))
        if marker is None:
            return False
        self.enter(marker)
        return True

    def _s_lead(self) -> bool:
        """After a final-response marker: its whitespace is markup too."""
        if not self.skip_ws() and not self.final:
            return False
        self.end_block()
        return True


class AprielReasoningParser(ThinkParser):
    """Reasoning from ``Here are my reasoning steps:`` to ``[BEGIN FINAL RESPONSE]``."""

    name = "apriel"
    open_marker = _HEAD
    close_marker = _BEGIN
    special_markers = (_HEAD, _BEGIN)
    openers = ((_HEAD, Think.REASONING),)
