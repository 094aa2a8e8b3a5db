"""Llama 3.x: JSON calls ``{"name": …, "parameters": …}`` (``;``-separated) and ``<|python_tag|>``.

Without a marker a JSON object is a call only if it is an object whose ``name``
is followed by ``parameters``/``arguments``; anything else stays prose. After
``<|python_tag|>`` come JSON calls, a built-in call ``tool.call(k="v")`` or code.
Llama 3.1's custom tool calls ``<function=NAME>{…}</function>`` are read by the
machine shared with Functionary v3.1 (:class:`~.functionary.FunctionTagCalls`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.base import WS
from ...parsing.blocks import Block, CodeBody, JsonCall
from ...parsing.literals import KwargsCall
from ...parsing.pythonic import Pythonic, PythonicParser
from ...parsing.states import State
from ..functionary.parser import FUNC_OPEN, FunctionTag, FunctionTagCalls
from .markers import EOM_ID, PYTHON_TAG

_TAG, _EOM = PYTHON_TAG, EOM_ID
_BUILTIN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\.call\(")
_IDENT = re.compile(r"[A-Za-z0-9_]*")


class _Llama3(State):
    """States of :class:`Llama3JsonParser` beyond :class:`~.functionary.FunctionTag`."""

    PY_HEAD = auto()  # after ``<|python_tag|>``: JSON, a built-in call or code
    BUILTIN = auto()  # a built-in call's ``k=v`` arguments


class Llama3JsonParser(FunctionTagCalls):
    """See module doc."""

    states = _Llama3

    name = "llama3_json"
    code_calls = True
    special_markers = (_TAG, _EOM)
    starts: ClassVar[Mapping[str, State]] = {
        _TAG: _Llama3.PY_HEAD,
        "{": Block.GAP,
        FUNC_OPEN: FunctionTag.FN_HEAD,
        _EOM: Block.TEXT,  # after calls (e.g. custom tool calls): markup
    }
    #: A ``<|python_tag|>`` block ends at ``<|eom_id|>`` (markup, not content).
    ends: ClassVar[Mapping[str, str | None]] = {_TAG: _EOM}

    code_end = _EOM

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kwargs: KwargsCall | None = None
        self._tagged = False

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self._tagged = marker == _TAG
        if marker == "{":
            self.pos -= 1  # the object starts at the brace
            self.state = Block.GAP

    def start_call(self) -> None:
        self.call = JsonCall(self.out, defer=not self._tagged)
        self.state = Block.CALL

    def _s_gap(self) -> bool:
        if not self.block_calls and not self._tagged:
            self.start_call()
            return True
        return super()._s_gap()

    def _s_py_head(self) -> bool:
        if not self.skip_ws():
            if self.final:
                self.end_block()
                return True
            return False
        if self.buf[self.pos] in "{[":
            self.state = Block.GAP
            return True
        end = _IDENT.match(self.buf, self.pos).end()  # type: ignore[union-attr]
        if end + 6 > len(self.buf) and not self.final and end - self.pos < 128:
            return False  # not yet decidable
        m = _BUILTIN.match(self.buf, self.pos)
        if m is not None:
            index = self.out.start_call(m.group(1))
            self.kwargs = KwargsCall(self.out, index, close=")")
            self.pos = m.end()
            self.state = _Llama3.BUILTIN
            return True
        self.code = CodeBody(self.out, self.out.start_call("code_interpreter", code=True))
        self.state = Block.CODE
        return True

    def _s_builtin(self) -> bool:
        kw = self.kwargs
        assert kw is not None
        self.pos = kw.feed(self.buf, self.pos, self.final)
        if not kw.finished:
            return False
        self.kwargs = None
        self.block_calls += 1
        self.state = Block.GAP  # then <|eom_id|> ends the block
        return True


class _Llama4(State):
    """States of :class:`Llama4Parser` beyond :class:`~.pythonic.Pythonic`."""

    PY_TEXT = auto()  # text in a ``<|python_start|>`` block that is not a call


class Llama4Parser(PythonicParser):
    """Llama 4: pythonic calls as the peers read them (``[f(a=1)]``, bare or in
    ``<|python_start|>…<|python_end|>``; vLLM's ``llama4_pythonic``) and the form the official
    template writes past calls in: ``<|python_start|>TEXT<|python_end|>`` (the turn's text,
    markers as markup) followed by ``{"name": …, "parameters": …}`` JSON objects.

    A bare JSON object is a call only when a name and ``parameters``/``arguments`` follow
    (else prose), as in ``llama3_json``.
    """

    states = _Llama4

    name = "llama4"
    starts: ClassVar[Mapping[str, State]] = {
        **PythonicParser.starts,
        "{": Block.GAP,
    }

    def enter(self, marker: str) -> None:
        super().enter(marker)
        if marker == "{":
            self.pos -= 1  # the object starts at the brace
            self.cur_end = None

    def _s_gap(self) -> bool:
        if not self.cur_end and not self.block_calls:
            self.call = JsonCall(
                self.out, name_keys=self.name_keys, args_keys=self.args_keys, defer=True
            )
            self.state = Block.CALL
            return True
        return super()._s_gap()

    def _s_py_block(self) -> bool:
        """As :class:`PythonicParser`; whitespace before text that is not a call stays content."""
        start = self.pos
        at = len(self.buf) - len(self.buf[start:].lstrip(WS))
        if at == len(self.buf) and not self.final:
            return False
        self.pos = at
        stepped = super()._s_py_block()
        if self.state is _Llama4.PY_TEXT or (not stepped and self.state is Pythonic.PY_BLOCK):
            self.pos = start
        return stepped

    def _not_calls(self) -> None:
        if self.cur_end and not self.block_calls:
            self.state = _Llama4.PY_TEXT  # the template's wrapper of the turn's text
            return
        super()._not_calls()

    def _s_py_text(self) -> bool:
        assert self.cur_end is not None
        end, marker, resume = self.end_set(self.cur_end).split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        self.out.content(self.buf[self.pos : end])
        self.pos = resume
        if marker is None:
            return False
        self.end_block()
        return True
