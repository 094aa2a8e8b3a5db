"""Kimi-K2 tool calls (Kimi-K2-Instruct, -0905, K2-Thinking).

``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>``.
The header ``functions.NAME:IDX`` is the call id the model uses (kept as the
OpenAI call id); the name sits between ``functions.`` and the last ``:``. A header
of another shape is kept as a call flagged ``"call id is not functions.NAME:INDEX"``.
The section markers are optional around a call; the singular spelling
``<|tool_call_section_begin|>`` is accepted too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import auto
from typing import ClassVar

from ...parsing.blocks import Block, BlockParser, RawArgs
from ...parsing.reasoning import ThinkParser
from ...parsing.states import State
from .markers import (
    TOOL_CALL_ARGUMENT_BEGIN,
    TOOL_CALL_BEGIN,
    TOOL_CALL_END,
    TOOL_CALL_SECTION_BEGIN,
    TOOL_CALL_SECTION_END,
    TOOL_CALLS_SECTION_BEGIN,
    TOOL_CALLS_SECTION_END,
)

SECTION_BEGIN, SECTION_END = TOOL_CALLS_SECTION_BEGIN, TOOL_CALLS_SECTION_END
SECTION_BEGIN_1, SECTION_END_1 = TOOL_CALL_SECTION_BEGIN, TOOL_CALL_SECTION_END
CALL_BEGIN, ARG_BEGIN, CALL_END = (
    TOOL_CALL_BEGIN,
    TOOL_CALL_ARGUMENT_BEGIN,
    TOOL_CALL_END,
)
#: Markers that end a thinking block when the model starts calling tools inside it.
_ENDS_THINKING = (SECTION_BEGIN, SECTION_BEGIN_1, CALL_BEGIN)
_SECTION_ENDS = ((SECTION_END, Block.TEXT), (SECTION_END_1, Block.TEXT))
_CALL_ID = re.compile(r"(?:functions\.)?(.+):([0-9]+)", re.DOTALL)
#: Longest header (call id) held while waiting for ``<|tool_call_argument_begin|>``.
_MAX_HEAD = 512


def split_call_id(head: str) -> tuple[str, str | None]:
    """``functions.NAME:IDX`` → ``(NAME, head)``; another shape → ``(head without "functions.", None)``."""
    m = _CALL_ID.fullmatch(head)
    if m is None:
        return head.removeprefix("functions."), None
    return m.group(1), head


class _Kimi(State):
    """States of :class:`KimiK2Parser` beyond :class:`~.blocks.Block`."""

    K_SECTION = auto()  # between calls
    K_HEAD = auto()  # the call id, up to the arguments
    K_ARGS = auto()  # the JSON arguments
    K_TAIL = auto()  # up to ``<|tool_call_end|>``
    K_JUNK = auto()


class KimiK2Parser(BlockParser):
    """States: ``text``, ``k_section`` (between calls), ``k_head`` (the call id),
    ``k_args`` (JSON arguments), ``k_tail`` (up to ``<|tool_call_end|>``), ``k_junk``."""

    states = _Kimi

    name = "kimi_k2"
    special_markers = (
        SECTION_BEGIN,
        SECTION_END,
        SECTION_BEGIN_1,
        SECTION_END_1,
        CALL_BEGIN,
        ARG_BEGIN,
        CALL_END,
    )
    starts: ClassVar[Mapping[str, State]] = {
        SECTION_BEGIN: _Kimi.K_SECTION,
        SECTION_BEGIN_1: _Kimi.K_SECTION,
        CALL_BEGIN: _Kimi.K_HEAD,
        SECTION_END: Block.TEXT,  # a stray section end is markup
        SECTION_END_1: Block.TEXT,
    }

    def _s_k_section(self) -> bool:
        if not self.skip_ws():
            return False
        for marker, state in ((CALL_BEGIN, _Kimi.K_HEAD), *_SECTION_ENDS):
            hit = self.at_marker(marker)
            if hit is None:
                return False
            if hit:
                self.state = state
                return True
        self.end_block()  # text inside the section: content
        return True

    def _s_k_head(self) -> bool:
        end, marker, resume = self.end_set(ARG_BEGIN, CALL_END).split(self.buf, self.pos, self.real)
        if marker is None:
            if not self.final and len(self.buf) - self.pos <= _MAX_HEAD:
                return False
            end = resume = len(self.buf)
        name, call_id = split_call_id(self.buf[self.pos : end].strip())
        self.pos = resume
        error = None if call_id is not None else "call id is not functions.NAME:INDEX"
        if marker is None:
            error = "truncated" if self.final else "call header too long"
        elif marker == CALL_END:
            error = "no arguments"
        index = self.out.start_call(name, error=error, call_id=call_id)
        if marker == ARG_BEGIN:
            self.raw = RawArgs(self.out, index)
            self.state = _Kimi.K_ARGS
        elif marker is None and not self.final:
            self.junk_index = index
            self.state = _Kimi.K_JUNK
        else:
            self.out.args(index, "")
            self.state = _Kimi.K_SECTION
        return True

    def _s_k_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        self.state = _Kimi.K_JUNK if status == "failed" else _Kimi.K_TAIL
        return True

    def _s_k_tail(self) -> bool:
        start = self.pos
        if not self.skip_ws():
            if not self.final:
                self.pos = start  # whitespace: undecided until what follows it is known
            return False
        for marker, state in (
            (CALL_END, _Kimi.K_SECTION),
            (CALL_BEGIN, _Kimi.K_HEAD),
            *_SECTION_ENDS,
        ):
            hit = self.at_marker(marker)
            if hit is None:
                return False
            if hit:  # the end marker, or the next call / the section end without it
                self.state = state
                return True
        # text between the arguments and <|tool_call_end|>: the call is broken
        index = self.out.calls - 1
        self.out.fail(index, "text after the arguments")
        self.out.args(index, self.buf[start : self.pos])
        self.junk_index = index
        self.state = _Kimi.K_JUNK
        return True

    def _s_k_junk(self) -> bool:
        self.cur_end = CALL_END
        more = self._s_junk()
        if self.state is Block.TEXT:
            self.state = _Kimi.K_SECTION
        return more


class KimiK2ThinkParser(ThinkParser):
    """Kimi-K2-Thinking: ``<think>…</think>``; a tool-call section (or call) that starts
    inside the block also ends it (the model calls tools before closing its thinking)."""

    name = "kimi_k2"
    special_markers: ClassVar[tuple[str, ...]] = (*ThinkParser.special_markers, *_ENDS_THINKING)
    ends_reasoning: ClassVar[tuple[str, ...]] = _ENDS_THINKING
