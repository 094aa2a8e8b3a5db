"""Upstage Solar Open: ``<|think|>…<|end|>``, ``<|content|>…<|end|>``, and calls
``<|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{…}<|tool_call:end|>…<|calls|>``.

Each part of the turn is a segment that may start with ``<|begin|>assistant``;
those headers, ``<|content|>``, ``<|end|>``, ``<|tool_calls|>`` and ``<|calls|>`` are
markup. The model's call id is not kept (ids come from ``id_factory``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.blocks import Block, BlockParser, RawArgs
from ...parsing.reasoning import Think, ThinkParser
from ...parsing.states import State
from .markers import (
    BEGIN,
    BEGIN_ASSISTANT,
    CALLS,
    CONTENT,
    END,
    THINK,
    TOOL_CALL_ARGS,
    TOOL_CALL_BEGIN,
    TOOL_CALL_END,
    TOOL_CALL_NAME,
    TOOL_CALLS,
)

_THINK, _END, _HEADER = THINK, END, BEGIN_ASSISTANT
_CONTENT, _CALLS, _CALLS_END = CONTENT, TOOL_CALLS, CALLS
_BEGIN, _NAME, _ARGS, _CALL_END = (
    TOOL_CALL_BEGIN,
    TOOL_CALL_NAME,
    TOOL_CALL_ARGS,
    TOOL_CALL_END,
)
_MAX_HEAD = 256


class _Solar(State):
    """States of :class:`SolarOpenParser` beyond :class:`~.blocks.Block`."""

    CALL_ID = auto()  # the call id, up to the name marker
    NAME = auto()  # the tool name, up to the arguments marker
    ARGS = auto()  # the raw JSON arguments
    CALL_END = auto()  # up to the call's end marker


class SolarOpenParser(BlockParser):
    """States beyond :class:`BlockParser`'s: :class:`_Solar` (the call id and the name are
    held until their closing marker, at most :data:`_MAX_HEAD` characters)."""

    states = _Solar

    name = "solar_open"
    special_markers: ClassVar[tuple[str, ...]] = (
        _THINK,
        _END,
        BEGIN,
        _CONTENT,
        _CALLS,
        _CALLS_END,
        _BEGIN,
        _NAME,
        _ARGS,
        _CALL_END,
    )
    starts: ClassVar[Mapping[str, State]] = {
        _HEADER: Block.TEXT,
        _CONTENT: Block.TEXT,
        _END: Block.TEXT,
        _CALLS: Block.TEXT,
        _CALLS_END: Block.TEXT,
        _BEGIN: _Solar.CALL_ID,
    }

    def _head(self, closing: str) -> str | None:
        """The text up to ``closing`` (consumed with it); None while it may still come."""
        end, marker, resume = self.end_set(closing).split(self.buf, self.pos, self.real)
        if marker is None:
            return None
        text = self.buf[self.pos : end]
        self.pos = resume
        return text

    def _cut_head(self, opener: str, error: str) -> bool:
        """A header that never closed: a flagged call whose arguments are its raw text."""
        index = self.out.start_call("", error=error)
        self.out.args(index, opener + self.buf[self.pos :])
        self.pos = len(self.buf)
        self.end_block()
        return True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._call_id: str | None = None  # the id the model wrote for the current call

    def _s_call_id(self) -> bool:
        text = self._head(_NAME)
        if text is not None:
            self._call_id = text.strip() or None
        if text is None:
            if self.final:
                return self._cut_head(_BEGIN, "truncated")
            if len(self.buf) - self.pos > _MAX_HEAD:
                return self._cut_head(_BEGIN, "no tool name")
            return False
        self.state = _Solar.NAME
        return True

    def _s_name(self) -> bool:
        start = self.pos
        text = self._head(_ARGS)
        if text is None:
            if self.final or len(self.buf) - start > _MAX_HEAD:
                name = self.buf[start:].strip()
                index = self.out.start_call(
                    name, error="truncated" if self.final else "no arguments"
                )
                self.out.args(index, "")
                self.pos = len(self.buf)
                self.end_block()
                return True
            return False
        index = self.out.start_call(text.strip(), call_id=self._call_id)
        self.raw = RawArgs(self.out, index)
        self.state = _Solar.ARGS
        return True

    def _s_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        if status == "failed":
            self.cur_end = _CALL_END
            self.state = Block.JUNK
        else:
            self.state = _Solar.CALL_END
        return True

    def _s_call_end(self) -> bool:
        if not self.skip_ws():
            if self.final:
                self.end_block()
                return True
            return False
        if self.at_marker(_CALL_END) is None:
            return False
        self.end_block()
        return True


class SolarOpenThinkParser(ThinkParser):
    """``<|think|>reasoning<|end|>``, then (after ``<|begin|>assistant``) the answer."""

    name = "solar_open"
    open_marker = _THINK
    close_marker = _END
    special_markers: ClassVar[tuple[str, ...]] = (_THINK, _END)
    openers: ClassVar[tuple[tuple[str, State], ...]] = (
        (_THINK, Think.REASONING),
        (_HEADER, Think.START),
    )
    after_openers: ClassVar[tuple[tuple[str, State], ...]] = ((_HEADER, Think.INNER),)
