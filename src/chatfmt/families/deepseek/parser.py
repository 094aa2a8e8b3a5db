"""DeepSeek V3 / V3.1 / R1 tool calls.

V3: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>``;
V3.1: ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>``. Both are accepted by both names:
after ``<｜tool▁sep｜>`` a JSON value means the V3.1 form.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.blocks import Block, BlockParser, RawArgs
from ...parsing.states import State
from .markers import TOOL_CALL_BEGIN, TOOL_CALL_END, TOOL_CALLS_BEGIN, TOOL_CALLS_END, TOOL_SEP

CALLS_BEGIN, CALLS_END = TOOL_CALLS_BEGIN, TOOL_CALLS_END
CALL_BEGIN, CALL_END, SEP = TOOL_CALL_BEGIN, TOOL_CALL_END, TOOL_SEP
_MAX_HEAD = 512


class _DS(State):
    """States of :class:`DeepSeekV3Parser` beyond :class:`~.blocks.Block`."""

    DS_GAP = auto()  # between calls
    DS_HEAD = auto()  # V3.1's name or V3's call type, up to the separator
    DS_AFTER_SEP = auto()  # V3.1's JSON arguments or V3's name line
    DS_FENCE = auto()  # V3's ```json line
    DS_ARGS = auto()
    DS_TAIL = auto()  # the closing fence and the call's end
    DS_JUNK = auto()


class DeepSeekV3Parser(BlockParser):
    """See module doc."""

    states = _DS

    name = "deepseek_v3"
    special_markers = (CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP)
    starts: ClassVar[Mapping[str, State]] = {CALLS_BEGIN: _DS.DS_GAP, CALL_BEGIN: _DS.DS_HEAD}
    end = CALL_END

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head = ""

    def _s_ds_gap(self) -> bool:
        if not self.skip_ws():
            return False
        for marker, state in ((CALL_BEGIN, _DS.DS_HEAD), (CALLS_END, Block.TEXT)):
            hit = self.at_marker(marker)
            if hit is None:
                return False
            if hit:
                self.state = state
                return True
        self.end_block()
        return True

    def _line(self, *ends: str) -> tuple[str, str | None] | None:
        end, marker, resume = self.end_set(*ends).split(self.buf, self.pos, self.real)
        if marker is None and not self.final and len(self.buf) - self.pos < _MAX_HEAD:
            return None
        if marker is None:
            end = resume = len(self.buf)
        text = self.buf[self.pos : end]
        self.pos = resume
        return text, marker

    def _s_ds_head(self) -> bool:
        got = self._line(SEP, CALL_END)
        if got is None:
            return False
        self._head, marker = got[0].strip(), got[1]
        if marker != SEP:
            index = self.out.start_call(self._head, error="no arguments")
            self.out.args(index, "")
            self.state = _DS.DS_GAP
            return True
        self.state = _DS.DS_AFTER_SEP
        return True

    def _s_ds_after_sep(self) -> bool:
        if not self.skip_ws():
            if self.final:
                self.out.start_call(self._head, error="truncated")
                return False
            return False
        if self.buf[self.pos] in "{[":
            self.raw = RawArgs(self.out, self.out.start_call(self._head))
            self.state = _DS.DS_ARGS
            return True
        got = self._line("\n", CALL_END)
        if got is None:
            return False
        name, marker = got[0].strip(), got[1]
        index = self.out.start_call(name)
        if marker != "\n":
            self.out.fail(index, "no arguments")
            self.state = _DS.DS_GAP
            return True
        self.raw = RawArgs(self.out, index)
        self.state = _DS.DS_FENCE
        return True

    def _s_ds_fence(self) -> bool:
        if not self.skip_ws():
            return self._s_ds_args() if self.final else False
        hit = self.at_marker("```")
        if hit is None:
            return False
        if hit:
            nl = self.buf.find("\n", self.pos)
            if nl < 0:
                if not self.final:
                    self.pos -= 3
                    return False
                nl = len(self.buf) - 1
            self.pos = nl + 1
        self.state = _DS.DS_ARGS
        return True

    def _s_ds_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        self.state = _DS.DS_JUNK if status == "failed" else _DS.DS_TAIL
        return True

    def _s_ds_tail(self) -> bool:
        if not self.skip_ws():
            return False
        hit = self.at_marker("```")
        if hit is None:
            return False
        if hit:
            return True
        hit = self.at_marker(CALL_END)
        if hit is None:
            return False
        if hit:
            self.state = _DS.DS_GAP
            return True
        self.end_block()
        return True

    def _s_ds_junk(self) -> bool:
        self.cur_end = CALL_END
        done = self._s_junk()
        if self.state is Block.TEXT:
            self.state = _DS.DS_GAP
        return done
