"""Sber GigaChat 3 / 3.1: one JSON call object ``{"name": …, "arguments": {…}}`` per turn.

GigaChat 3 ends the answer with ``<|message_sep|>`` and writes the call as a
further role, ``function call<|role_sep|>\\n{…}``; GigaChat 3.1 writes
``<|function_call|>{…}`` right after the answer, and ``<|message_sep|>`` ends its turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.states import State
from .markers import EOS, FUNCTION_CALL, MESSAGE_SEP, ROLE_SEP

_SEP, _ROLE_SEP, _CALL = MESSAGE_SEP, ROLE_SEP, FUNCTION_CALL
_ROLE = "function call" + _ROLE_SEP


class _GigaChat(State):
    """States of :class:`GigaChat3Parser` beyond :class:`~.blocks.Block`."""

    SEP = auto()  # after ``<|message_sep|>``


class GigaChat3Parser(BlockParser):
    """GigaChat 3: ``<|message_sep|>`` is markup; a ``function call`` role after it is a call.

    Text after ``<|message_sep|>`` that is no ``function call`` role stays content, the
    separator included (the model went on without an end of turn).
    """

    states = _GigaChat

    name = "gigachat3"
    special_markers: ClassVar[tuple[str, ...]] = (_SEP, _ROLE_SEP, _CALL)
    starts: ClassVar[Mapping[str, State]] = {
        _SEP: _GigaChat.SEP,
        _ROLE: Block.GAP,
        _CALL: Block.GAP,
    }
    ends: ClassVar[Mapping[str, str | None]] = {_ROLE: _SEP, _CALL: _SEP}
    single = True
    end_of_turn = (EOS,)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sep_ws = ""  # whitespace after the last <|message_sep|>

    def enter(self, marker: str) -> None:
        super().enter(marker)
        if marker == _SEP:
            self._sep_ws = ""

    def end_block(self) -> None:
        if self.state is not _GigaChat.SEP and self.buf.endswith(_SEP, 0, self.pos):
            # the call's <|message_sep|> was just read: the turn may go on
            self.state, self._sep_ws = _GigaChat.SEP, ""
            self.in_list = False
            return
        super().end_block()

    def _s_sep(self) -> bool:
        """After ``<|message_sep|>``: whitespace, then a ``function call`` role or more text
        (which keeps the separator and whitespace as content: no text is dropped)."""
        start = self.pos
        more = self.skip_ws()
        self._sep_ws += self.buf[start : self.pos]
        if not more:
            if self.final:
                super().end_block()
                return True
            return False
        hit = self.at_marker(_ROLE)
        if hit is None:
            return False
        if hit:
            self.enter(_ROLE)
        else:
            self.out.content(_SEP + self._sep_ws)
            super().end_block()
        return True


class GigaChat31Parser(GigaChat3Parser):
    """GigaChat 3.1: ``<|function_call|>{…}``; ``<|message_sep|>`` ends the turn (not read here)."""

    name = "gigachat3.1"
    special_markers = (_CALL,)
    starts: ClassVar[Mapping[str, State]] = {_CALL: Block.GAP}
    ends: ClassVar[Mapping[str, str | None]] = {_CALL: None}
