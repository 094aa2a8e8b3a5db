"""Cohere Command-R / R+ (``Action: ```json [...] ``` ``) and Command R7B
(``<|START_ACTION|>[...]<|END_ACTION|>``, thinking in ``<|START_THINKING|>…<|END_THINKING|>``).

Call objects use ``tool_name`` and ``parameters``. ``<|START_RESPONSE|>`` /
``<|END_RESPONSE|>`` (and North's ``<|START_TEXT|>`` / ``<|END_TEXT|>``) are markup around
the answer and are not content. North / Command A+ (``Cohere2MoE``) prompts open the thinking
block: the ``command_a`` reasoning parser reads it then.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.reasoning import think_parser
from ...parsing.states import State
from .markers import (
    ACTION,
    END_ACTION,
    END_RESPONSE,
    END_TEXT,
    END_THINKING,
    FENCE,
    START_ACTION,
    START_RESPONSE,
    START_TEXT,
    START_THINKING,
)

_ACT, _ACT_END = START_ACTION, END_ACTION
_THINK, _THINK_END = START_THINKING, END_THINKING
_RESP, _RESP_END = START_RESPONSE, END_RESPONSE
_TEXT, _TEXT_END = START_TEXT, END_TEXT
_ACTION = ACTION


class _CommandR(State):
    """States of :class:`CommandRParser` beyond :class:`~.blocks.Block`."""

    ACTION = auto()  # after ``Action:``: a ```json fence or text
    THINK = auto()  # Command R7B's thinking block


class CommandRParser(BlockParser):
    """See module doc."""

    states = _CommandR

    name = "command_r"
    special_markers = (_ACT, _ACT_END, _THINK, _THINK_END, _RESP, _RESP_END, _TEXT, _TEXT_END)
    starts: ClassVar[Mapping[str, State]] = {
        _ACT: Block.GAP,
        _ACTION: _CommandR.ACTION,
        _THINK: _CommandR.THINK,
        _RESP: Block.TEXT,
        _RESP_END: Block.TEXT,
        _TEXT: Block.TEXT,
        _TEXT_END: Block.TEXT,
    }
    ends: ClassVar[Mapping[str, str | None]] = {_ACT: _ACT_END, _ACTION: FENCE}
    name_keys = ("tool_name", "name")
    args_keys = ("parameters", "arguments")

    def _s_action(self) -> bool:
        """``Action:`` must be followed by a ```json fence, else it is text (nothing consumed until decided)."""
        buf, p = self.buf, self.pos
        while p < len(buf) and buf[p] in " \t\r\n":
            p += 1
        rest = buf[p : p + 3]
        if len(rest) < 3 and not self.final:
            return False
        if rest == FENCE:
            self.pos = p + 3
            if buf.startswith("json", self.pos):
                self.pos += 4
            elif (
                "json".startswith(buf[self.pos : self.pos + 4])
                and len(buf) - self.pos < 4
                and not self.final
            ):
                self.pos = p  # wait for the language tag
                return False
            self.state = Block.GAP
            return True
        self.out.content(_ACTION)
        self.end_block()
        return True

    def _s_think(self) -> bool:
        end, marker, resume = self.end_set(_THINK_END).split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        self.out.reasoning(self.buf[self.pos : end])
        self.pos = resume
        if marker is None:
            return False
        self.end_block()
        return True


#: Reasoning in ``<|START_THINKING|>…<|END_THINKING|>``, also when the prompt opened it.
CommandAThinkParser = think_parser("command_a", _THINK, _THINK_END, qualname="CommandAThinkParser")
