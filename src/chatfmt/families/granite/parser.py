"""Granite (``<|tool_call|>[…]`` and ``<tool_call>{…}</tool_call>``; Granite 3.3 thinking
``<think>…</think><response>…</response>``, Granite 3.2 thinking ``Here is my thought
process: … Here is my response: …``) and Phi-4 (``functools[…]``)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ..._moved import moved_name
from ...parsing.base import WS
from ...parsing.blocks import Block, BlockParser
from ...parsing.markers import marker_set
from ...parsing.reasoning import Think, ThinkParser
from ...parsing.states import State
from .markers import (
    MY_RESPONSE,
    RESPONSE,
    RESPONSE_CLOSE,
    THOUGHT_PROCESS,
    TOOL_CALL,
    TOOL_CALL_CLOSE,
    TOOL_CALL_TOKEN,
)


class GraniteParser(BlockParser):
    """Granite 3.x writes ``<|tool_call|>`` and a JSON list; Granite 4 uses Hermes-style blocks."""

    name = "granite"
    special_markers = (TOOL_CALL_TOKEN, TOOL_CALL, TOOL_CALL_CLOSE)
    starts: ClassVar[Mapping[str, State]] = {TOOL_CALL_TOKEN: Block.GAP, TOOL_CALL: Block.GAP}
    ends: ClassVar[Mapping[str, str | None]] = {
        TOOL_CALL_TOKEN: None,
        TOOL_CALL: TOOL_CALL_CLOSE,
    }


_RESPONSE, _RESPONSE_END = RESPONSE, RESPONSE_CLOSE


class _GraniteThink(State):
    """States of :class:`GraniteThinkParser` beyond :class:`~.reasoning.Think`."""

    RESPONSE_LEAD = auto()  # whitespace after ``<response>``
    RESPONSE = auto()  # the answer, to ``</response>``
    TAIL = auto()  # after ``</response>``


class GraniteThinkParser(ThinkParser):
    """Granite 3.x thinking (``thinking=True``).

    Granite 3.3: ``<think>reasoning</think><response>answer</response>``. The
    ``<response>`` wrapper is markup: its answer goes to the tool parser (content and
    calls), the tags and the whitespace just inside them are dropped. Text after
    ``</response>`` stays content (with the whitespace before it). A truncated answer
    (no ``</response>``) is the answer so far; a tag cut off at the end is text.

    Granite 3.2 (vLLM's ``granite`` reasoning parser): ``Here is my thought process:``
    at the start of the output opens the reasoning, ``Here is my response:`` ends it
    (also the ``Here's …`` forms); the phrases and the whitespace around them are markup.
    Without the closing phrase, everything after the opening one is reasoning.
    """

    states = _GraniteThink

    name = "granite"
    special_markers: ClassVar[tuple[str, ...]] = (
        *ThinkParser.special_markers,
        _RESPONSE,
        _RESPONSE_END,
    )
    openers: ClassVar[tuple[tuple[str, State], ...]] = (
        *ThinkParser.openers,
        (_RESPONSE, _GraniteThink.RESPONSE_LEAD),
        *((phrase, Think.REASONING) for phrase in THOUGHT_PROCESS),
    )
    after_openers: ClassVar[tuple[tuple[str, State], ...]] = (
        (_RESPONSE, _GraniteThink.RESPONSE_LEAD),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._response_end = marker_set((_RESPONSE_END,), frozenset(self.special_markers))
        self._answer_ws = ""  # held trailing whitespace of the answer

    def _s_start(self) -> bool:
        """As :class:`ThinkParser`; a Granite 3.2 opening phrase is closed by its phrases."""
        went = super()._s_start()
        if self.state is Think.REASONING and any(
            self.buf.endswith(phrase, 0, self.pos) for phrase in THOUGHT_PROCESS
        ):
            self._close = marker_set(MY_RESPONSE, frozenset(self.special_markers))
        return went

    def _s_response_lead(self) -> bool:
        if not self.skip_ws() and not self.final:
            return False
        self.state = _GraniteThink.RESPONSE
        return True

    def _s_response(self) -> bool:
        buf = self.buf
        end, marker, resume = self._response_end.split(buf, self.pos, self.real)
        at = self.pos - len(self._answer_ws)  # the held whitespace came right before pos
        if marker is None and self.final:  # truncated: the answer so far, unstripped
            self.feed_inner(self._answer_ws + buf[self.pos :], at)
            self._answer_ws = ""
            self.pos = len(buf)
            return False
        text = self._answer_ws + buf[self.pos : end]
        body = text.rstrip(WS)
        self._answer_ws = text[len(body) :] if marker is None else ""
        self.feed_inner(body, at)
        self.pos = resume
        if marker is None:
            return False
        self.state = _GraniteThink.TAIL
        return True

    def _s_tail(self) -> bool:
        """After ``</response>``: whitespace up to the end is dropped; text after it is content."""
        start = self.pos
        if not self.skip_ws():
            if not self.final:
                self.pos = start  # undecided: kept until text follows or the stream ends
            return False
        self.pos = start
        self.state = Think.INNER
        return True


def __getattr__(name: str) -> Any:
    # Names that moved to a family package keep working for one release (with a warning).
    return moved_name(__name__, name)
