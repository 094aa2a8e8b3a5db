"""Muse Glimmer (ATEM): channel segments and ``<atem:function_calls>`` blocks.

The generation prompt ends with ``<|start|>assistant``; the model writes segments
``␣to=RECIPIENT<|message|>BODY``, separated by ``<|eom|><|start|>assistant`` and
ended by ``<|eot|>`` (the end of turn). Recipient ``self`` is reasoning; any other
body is the answer, in which ``<atem:function_calls>`` blocks are tool calls
(``<atem:invoke name="f"><atem:parameter name="k">v</atem:parameter>…``, read by
the shared :class:`~.invoke.InvokeParser` machine). Output without a segment
header is content.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.base import WS
from ...parsing.blocks import Block
from ...parsing.invoke import MAX_HEADER, Invoke, InvokeParser
from ...parsing.states import State
from .markers import ATEM_FUNCTION_CALLS, ATEM_FUNCTION_CALLS_CLOSE, EOM, MESSAGE, START

_START, _MESSAGE, _EOM = START, MESSAGE, EOM
_CALLS, _CALLS_END = ATEM_FUNCTION_CALLS, ATEM_FUNCTION_CALLS_CLOSE
_ROLE = "assistant"
_TO = "to="
#: Recipients whose segment is reasoning.
REASONING_RECIPIENTS = ("self",)


class _Glimmer(State):
    """States of :class:`GlimmerParser` beyond :class:`~.invoke.Invoke`."""

    SEGMENT = auto()  # a segment header
    REASONING = auto()  # a reasoning segment's body


class GlimmerParser(InvokeParser):
    """Segments (:class:`_Glimmer`; an answer segment is :attr:`~.blocks.Block.TEXT`) around ATEM calls."""

    states = _Glimmer

    name = "glimmer"
    special_markers = (_START, _MESSAGE, _EOM)
    starts: ClassVar[Mapping[str, State]] = {_CALLS: Invoke.CALLS, _EOM: _Glimmer.SEGMENT}
    end = _CALLS_END
    invoke_open = "<atem:invoke"
    invoke_close = "</atem:invoke>"
    param_open = "<atem:parameter"
    param_close = "</atem:parameter>"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state = _Glimmer.SEGMENT

    def _s_segment(self) -> bool:
        """A segment header ``[<|start|>][assistant] to=X<|message|>``; anything else is text.

        Nothing is consumed until the header is decided (it is at most
        :data:`~.invoke.MAX_HEADER` long).
        """
        buf, p, n = self.buf, self.pos, len(self.buf)
        for literal in (_START, _ROLE):
            if buf.startswith(literal, p):
                p += len(literal)
            elif p + len(literal) > n and literal.startswith(buf[p:]) and not self.final:
                return False
        while p < n and buf[p] in WS:
            p += 1
        if p == n and not self.final:
            return False
        recipient: str | None = None
        if buf.startswith(_TO, p):
            at = buf.find(_MESSAGE, p, p + MAX_HEADER)
            if at >= 0:
                recipient = buf[p + len(_TO) : at].strip()
                p = at + len(_MESSAGE)
            elif not self.final and n - p < MAX_HEADER:
                return False
        elif buf.startswith(_MESSAGE, p):
            recipient, p = "", p + len(_MESSAGE)
        elif not self.final and (_TO.startswith(buf[p:]) or _MESSAGE.startswith(buf[p:])):
            return False
        if recipient is None or (recipient and recipient.split()[0] != recipient):
            self.state = Block.TEXT  # not a header: the text is content
            return True
        self.pos = p
        self.state = _Glimmer.REASONING if recipient in REASONING_RECIPIENTS else Block.TEXT
        return True

    def _s_reasoning(self) -> bool:
        end, marker, resume = self.end_set(_EOM).split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        self.out.reasoning(self.buf[self.pos : end])
        self.pos = resume
        if marker is None:
            return False
        self.state = _Glimmer.SEGMENT
        return True
