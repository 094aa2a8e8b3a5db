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
from typing import ClassVar

from ...parsing.blocks import CodeBody, JsonCall
from ...parsing.literals import KwargsCall
from ..functionary.parser import FUNC_OPEN, FunctionTagCalls
from .markers import EOM_ID, PYTHON_TAG

_TAG, _EOM = PYTHON_TAG, EOM_ID
_BUILTIN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\.call\(")
_IDENT = re.compile(r"[A-Za-z0-9_]*")


class Llama3JsonParser(FunctionTagCalls):
    """See module doc."""

    name = "llama3_json"
    code_calls = True
    special_markers = (_TAG, _EOM)
    starts: ClassVar[Mapping[str, str]] = {
        _TAG: "py_head",
        "{": "json",
        FUNC_OPEN: "fn_head",
        _EOM: "text",  # after calls (e.g. custom tool calls): markup
    }
    #: A ``<|python_tag|>`` block ends at ``<|eom_id|>`` (markup, not content).
    ends: ClassVar[Mapping[str, str | None]] = {_TAG: _EOM}

    code_end = _EOM
    kwargs: KwargsCall | None = None
    _tagged = False

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self._tagged = marker == _TAG
        if marker == "{":
            self.pos -= 1  # the object starts at the brace
            self.state = "gap"

    def start_call(self) -> None:
        self.call = JsonCall(self.out, defer=not self._tagged)
        self.state = "call"

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
            self.state = "gap"
            return True
        end = _IDENT.match(self.buf, self.pos).end()  # type: ignore[union-attr]
        if end + 6 > len(self.buf) and not self.final and end - self.pos < 128:
            return False  # not yet decidable
        m = _BUILTIN.match(self.buf, self.pos)
        if m is not None:
            index = self.out.start_call(m.group(1))
            self.kwargs = KwargsCall(self.out, index, close=")")
            self.pos = m.end()
            self.state = "builtin"
            return True
        self.code = CodeBody(self.out, self.out.start_call("code_interpreter", code=True))
        self.state = "code"
        return True

    def _s_builtin(self) -> bool:
        kw = self.kwargs
        assert kw is not None
        self.pos = kw.feed(self.buf, self.pos, self.final)
        if not kw.finished:
            return False
        self.kwargs = None
        self.block_calls += 1
        self.state = "gap"  # then <|eom_id|> ends the block
        return True
