"""Mistral: ``[TOOL_CALLS][{…}, …]`` (list form) and ``[TOOL_CALLS]name{…}`` / ``name[ARGS]{…}``;
Magistral / Ministral-3 reasoning ``[THINK]…[/THINK]``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.blocks import Block, BlockParser, RawArgs
from ...parsing.reasoning import think_parser
from ...parsing.states import State
from .markers import ARGS, CALL_ID, THINK, THINK_CLOSE, TOOL_CALLS

_NAME = re.compile(r"[A-Za-z0-9_.\-]*")
_MAX_NAME = 256


class _Mistral(State):
    """States of :class:`MistralParser` beyond :class:`~.blocks.Block`."""

    HEAD = auto()  # after ``[TOOL_CALLS]``: a list, an object or a name
    ARGS_HEAD = auto()  # between the name and the JSON
    CALL_ID = auto()  # the ``[CALL_ID]`` value
    ARGS = auto()  # the JSON arguments of the name form


class MistralParser(BlockParser):
    """Both Mistral tool-call forms; several ``[TOOL_CALLS]`` may follow each other."""

    states = _Mistral

    name = "mistral"
    special_markers = (TOOL_CALLS, ARGS, CALL_ID)
    starts: ClassVar[Mapping[str, State]] = {TOOL_CALLS: _Mistral.HEAD}
    #: v3's call objects end with the id the model wrote: ``{"name", "arguments", "id"}``.
    id_keys = ("id",)

    @staticmethod
    def valid_id(call_id: str) -> bool:
        """Mistral's ids are 9 ASCII letters or digits (its templates refuse others)."""
        return len(call_id) == 9 and call_id.isascii() and call_id.isalnum()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name = ""  # the name of the call whose arguments come next
        self._call_id: str | None = None  # the id the model wrote for it, if any

    def _s_head(self) -> bool:
        if not self.skip_ws():
            return False
        c = self.buf[self.pos]
        if c in "[{":
            self.state = Block.GAP
            return True
        end = _NAME.match(self.buf, self.pos).end()  # type: ignore[union-attr]
        if end == len(self.buf) and not self.final and end - self.pos < _MAX_NAME:
            return False  # the name may go on
        name = self.buf[self.pos : end]
        if not name:
            self.state = Block.GAP  # not a call: handled as junk
            return True
        self.pos = end
        # the call opens at its arguments: a [CALL_ID] before them is the id the model wrote
        self._name, self._call_id = name, None
        self.state = _Mistral.ARGS_HEAD
        return True

    def _open_call(self) -> None:
        if self.raw is None:
            index = self.out.start_call(self._name, call_id=self._call_id)
            self.raw = RawArgs(self.out, index)

    def _s_args_head(self) -> bool:
        """Between the name and the JSON: optional ``[CALL_ID]id`` and ``[ARGS]``."""
        if not self.skip_ws():
            if self.final:
                self._open_call()
                return self._s_args()
            return False
        for marker in (ARGS, CALL_ID):
            hit = self.at_marker(marker)
            if hit is None:
                return False
            if hit:
                if marker == CALL_ID:
                    self.state = _Mistral.CALL_ID
                return True
        self._open_call()
        self.state = _Mistral.ARGS
        return True

    def _s_call_id(self) -> bool:
        end = self.buf.find(ARGS, self.pos)
        if end < 0:
            if not self.final:
                return False
            end = len(self.buf)
        call_id = self.buf[self.pos : end].strip()
        self._call_id = call_id if self.valid_id(call_id) else None
        self.pos = end
        self.state = _Mistral.ARGS_HEAD
        return True

    def _s_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        if status == "failed":
            self.cur_end = TOOL_CALLS
            self.state = Block.JUNK
        else:
            self.end_block()
        return True

    def _s_junk(self) -> bool:
        # a broken name-form call ends where the next [TOOL_CALLS] begins
        if self.cur_end == TOOL_CALLS:
            end, marker, _resume = self.end_set(TOOL_CALLS).split(self.buf, self.pos, None)
            if self.final and marker is None:
                end = len(self.buf)
            assert self.junk_index is not None
            self.out.args(self.junk_index, self.buf[self.pos : end])
            self.pos = end
            if marker is None:
                return False
            self.end_block()
            return True
        return super()._s_junk()


#: Magistral / Ministral-3 Reasoning: ``[THINK]reasoning[/THINK]answer`` (the answer to ``mistral``).
MistralThinkParser = think_parser(
    "mistral_think", THINK, THINK_CLOSE, qualname="MistralThinkParser"
)
