"""InternLM2 / InternLM2.5 / InternLM3: ``<|action_start|><|plugin|>{json}<|action_end|>`` and
``<|action_start|><|interpreter|>code<|action_end|>`` (several per turn).

Engines detokenize the two special tokens with nothing, a space or a newline
between them; all are accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import ClassVar

from ...parsing.blocks import Block, BlockParser, CodeBody
from ...parsing.states import State
from .markers import ACTION_END, ACTION_START, INTERPRETER, PLUGIN

_START, _END, _PLUGIN, _INTERP = (
    ACTION_START,
    ACTION_END,
    PLUGIN,
    INTERPRETER,
)


class _InternLM2(State):
    """States of :class:`InternLM2Parser` beyond :class:`~.blocks.Block`."""

    KIND = auto()  # after ``<|action_start|>``: the plugin or interpreter token


class InternLM2Parser(BlockParser):
    """Plugin calls are JSON objects (``name`` + ``parameters``/``arguments``); interpreter calls are code."""

    states = _InternLM2

    name = "internlm2"
    code_calls = True
    special_markers = (_START, _END, _PLUGIN, _INTERP)
    starts: ClassVar[Mapping[str, State]] = {_START: _InternLM2.KIND}
    end = _END
    single = True

    code_end = _END

    def _s_kind(self) -> bool:
        start = self.pos
        if not self.skip_ws():
            self.pos = start
            if self.final:
                self._not_action()
                return True
            return False
        for marker, state in ((_PLUGIN, Block.GAP), (_INTERP, Block.CODE)):
            hit = self.at_marker(marker)
            if hit is None:
                self.pos = start
                return False
            if hit:
                if state is Block.CODE:
                    self.code = CodeBody(
                        self.out, self.out.start_call("code_interpreter", code=True)
                    )
                self.state = state
                return True
        self.pos = start
        self._not_action()
        return True

    def _not_action(self) -> None:
        """``<|action_start|>`` not followed by a kind token: it is text (what follows is text too)."""
        self.out.content(_START)
        self.end_block()
