"""Swiss AI Apertus: ``<|tools_prefix|>[{"name": {arguments}}, …]<|tools_suffix|>``.

Each call is a one-member JSON object whose key is the tool name and whose value
is the arguments object. Reasoning is written ``<|inner_prefix|>…<|inner_suffix|>``
(the ``apertus`` reasoning parser).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import ClassVar

from ...parsing.base import WS
from ...parsing.blocks import Block, BlockParser, RawArgs
from ...parsing.json_stream import loads_or_none
from ...parsing.reasoning import think_parser
from ...parsing.states import State
from .markers import INNER_PREFIX, INNER_SUFFIX, TOOLS_PREFIX, TOOLS_SUFFIX

_OPEN, _CLOSE = TOOLS_PREFIX, TOOLS_SUFFIX
_MAX_NAME = 256


class _Apertus(State):
    """States of :class:`ApertusParser` beyond :class:`~.blocks.Block`."""

    KEY = auto()  # the quoted name and its colon
    ARGS = auto()  # the arguments value, streamed raw
    OBJ_END = auto()  # the call object's closing brace


class ApertusParser(BlockParser):
    """A JSON list of ``{"name": {arguments}}`` objects between the tools markers.

    States beyond :class:`BlockParser`'s: ``KEY`` (the quoted name and ``:``, held
    until complete, at most :data:`_MAX_NAME` characters), ``ARGS`` (the value,
    streamed raw), ``OBJ_END`` (the object's ``}``).
    """

    states = _Apertus

    name = "apertus"
    special_markers = (_OPEN, _CLOSE)
    starts: ClassVar[Mapping[str, State]] = {_OPEN: Block.GAP}
    end = _CLOSE

    def start_call(self) -> None:
        self.pos += 1  # the object's "{"
        self.state = _Apertus.KEY

    def _s_key(self) -> bool:
        buf, n = self.buf, len(self.buf)
        p = self.pos
        while p < n and buf[p] in WS:
            p += 1
        if p < n and buf[p] != '"':
            return self._junk("not a tool call")
        q = p + 1
        while q < n and buf[q] != '"':
            q += 2 if buf[q] == "\\" else 1
        r = q + 1
        while r < n and buf[r] in WS:
            r += 1
        if r >= n:  # the name or the colon is not there yet
            if not self.final and r - p <= _MAX_NAME:
                return False
            return self._junk("truncated" if self.final else "tool name too long")
        ok, name = loads_or_none(buf[p : q + 1])
        if buf[r] != ":" or not ok or not isinstance(name, str):
            return self._junk("not a tool call")
        self.pos = r + 1
        self.raw = RawArgs(self.out, self.out.start_call(name))
        self.state = _Apertus.ARGS
        return True

    def _junk(self, reason: str) -> bool:
        """The object is no call: flagged, its text (from ``{``) kept as arguments."""
        self.junk_index = self.out.start_call("", error=reason)
        self.out.args(self.junk_index, "{")
        self.state = Block.JUNK
        return True

    def _s_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        self.state = Block.JUNK if status == "failed" else _Apertus.OBJ_END
        return True

    def _s_obj_end(self) -> bool:
        if not self.skip_ws():
            if self.final:  # cut after complete arguments: the call stands
                self.end_block()
                return True
            return False
        self.block_calls += 1
        if self.buf[self.pos] == "}":
            self.pos += 1
            self.state = Block.GAP
            return True
        self.junk_index = self.out.calls - 1
        self.out.fail(self.junk_index, "more than one member in a call object")
        self.state = Block.JUNK
        return True


ApertusThinkParser = think_parser(
    "apertus", INNER_PREFIX, INNER_SUFFIX, qualname="ApertusThinkParser"
)
