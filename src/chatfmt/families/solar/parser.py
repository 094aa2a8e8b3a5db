"""Upstage Solar Open: ``<|think|>…<|end|>``, ``<|content|>…<|end|>``, and calls
``<|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{…}<|tool_call:end|>…<|calls|>``.

Each part of the turn is a segment that may start with ``<|begin|>assistant``;
those headers, ``<|content|>``, ``<|end|>``, ``<|tool_calls|>`` and ``<|calls|>`` are
markup. The model's call id is not kept (ids come from ``id_factory``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import BlockParser, RawArgs
from ...parsing.reasoning import ThinkParser
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


class SolarOpenParser(BlockParser):
    """States beyond :class:`BlockParser`'s: ``call_id`` and ``name`` (held until their
    closing marker, at most :data:`_MAX_HEAD` characters), ``args`` (raw JSON), ``call_end``."""

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
    starts: ClassVar[Mapping[str, str]] = {
        _HEADER: "text",
        _CONTENT: "text",
        _END: "text",
        _CALLS: "text",
        _CALLS_END: "text",
        _BEGIN: "call_id",
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

    def _s_call_id(self) -> bool:
        text = self._head(_NAME)
        if text is None:
            if self.final:
                return self._cut_head(_BEGIN, "truncated")
            if len(self.buf) - self.pos > _MAX_HEAD:
                return self._cut_head(_BEGIN, "no tool name")
            return False
        self.state = "name"
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
        self.raw = RawArgs(self.out, self.out.start_call(text.strip()))
        self.state = "args"
        return True

    def _s_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        if status == "failed":
            self.cur_end = _CALL_END
            self.state = "junk"
        else:
            self.state = "call_end"
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
    openers: ClassVar[tuple[tuple[str, str], ...]] = ((_THINK, "reasoning"), (_HEADER, "start"))
    after_openers: ClassVar[tuple[tuple[str, str], ...]] = ((_HEADER, "inner"),)
