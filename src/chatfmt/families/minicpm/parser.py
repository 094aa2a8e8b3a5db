"""OpenBMB MiniCPM5: ``<function name="NAME"><param name="K">V</param>…</function>``.

A value holding ``<``, ``&`` or a newline is wrapped in ``<![CDATA[…]]>`` (taken
verbatim); values are text, converted to the type the tool's schema declares and kept as
strings without a schema (see :mod:`chatfmt.parsing.xml_values`; the template writes non-strings in
Python's spelling, e.g. ``True``, ``{'a': 1}``, which the conversion reads). Reasoning is
``<think>…</think>`` (the ``think`` parser).

The opening tags are also read where the model's output lost the space before ``name``
(``<functionname="``, ``<paramname="``) or holds it as ``Ġ`` (U+0120, a byte-level
tokenizer's space symbol decoded as text), as vLLM's MiniCPM5 parser reads them: such a call
is the call the model meant, and renders back in the template's spelling. Text outside tags
is never rewritten (``Ġ`` is also a letter, e.g. in Maltese).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.states import State
from ...parsing.xml_values import JsonMembers, parameter_schema, typed_value
from .markers import FUNCTION_NAME

_FN, _FN_END = FUNCTION_NAME, "</function>"
_PARAM, _PARAM_END = '<param name="', "</param>"
#: The space before ``name`` as written, lost, or as U+0120 (see the module doc).
_SPACES = (" ", "", "\u0120")
_OPENERS = tuple(f'<function{sp}name="' for sp in _SPACES)
_PARAMS = tuple(f'<param{sp}name="' for sp in _SPACES)
_ATTR_END = '">'
_CDATA, _CDATA_END = "<![CDATA[", "]]>"
_MAX_HEAD = 256


class _MiniCPM(State):
    """States of :class:`MiniCPM5Parser` beyond :class:`~.blocks.Block`."""

    NAME = auto()  # the quoted tool name
    PARAMS = auto()  # between parameters
    KEY = auto()  # a parameter's quoted name
    VALUE_HEAD = auto()  # CDATA or not
    VALUE = auto()  # up to ``</param>``
    CDATA = auto()  # up to ``]]>``
    CDATA_END = auto()  # after ``]]>``


class MiniCPM5Parser(BlockParser):
    """States beyond :class:`BlockParser`'s: :class:`_MiniCPM` (``NAME`` and ``KEY``, the
    quoted attribute, are held until ``">``, at most :data:`_MAX_HEAD` characters).

    A call that breaks is flagged with its raw text up to ``</function>``.
    """

    states = _MiniCPM

    name = "minicpm5"
    starts: ClassVar[Mapping[str, State]] = dict.fromkeys(_OPENERS, _MiniCPM.NAME)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._members: JsonMembers | None = None
        self._name = ""
        self._key = ""
        self._opener = _FN  # the opening tags as the model wrote them
        self._param = _PARAM

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self.cur_end = _FN_END
        self._parts = []
        self._opener = marker

    def _s_name(self) -> bool:
        text = self._gather(_ATTR_END, special=False)
        if text is None:
            if not self.final and self._gathered() <= _MAX_HEAD:
                return False
            index = self.out.start_call("", error="truncated" if self.final else "no tool name")
            self.out.args(index, self._opener + "".join(self._parts))
            self._parts = []
            self.junk_index = index
            self.state = Block.JUNK
            return True
        self._name = text
        self._members = JsonMembers(self.out, self.out.start_call(text))
        self.state = _MiniCPM.PARAMS
        return True

    def _s_params(self) -> bool:
        if not self.skip_ws():
            if self.final:  # cut after complete parameters: the call stands
                return self._close_call()
            return False
        if self.final and self._cut_tag(_FN_END):
            return True
        rest = self.buf[self.pos :]
        if self.final and any(p.startswith(rest) for p in _PARAMS):  # "<para": cut off
            return self._broken("truncated", "")
        found = self.at_any(*_PARAMS, _FN_END)
        if found is None:
            return False
        if found == _FN_END:
            return self._close_call()
        if found:
            self._param = found
            self.state = _MiniCPM.KEY
            return True
        return self._broken("malformed parameters", "")

    def _s_key(self) -> bool:
        text = self._gather(_ATTR_END, special=False)
        if text is None:
            if self.final or self._gathered() > _MAX_HEAD:
                reason = "truncated" if self.final else "malformed parameters"
                return self._broken(reason, self._param)
            return False
        self._key = text
        self.state = _MiniCPM.VALUE_HEAD
        return True

    def _head(self) -> str:
        return self._param + self._key + _ATTR_END

    def _s_value_head(self) -> bool:
        hit = self.at_marker(_CDATA)
        if hit is None:
            return False
        self.state = _MiniCPM.CDATA if hit else _MiniCPM.VALUE
        return True

    def _s_value(self) -> bool:
        if self.final:
            end, marker, _ = self.end_set(_PARAM_END).split(self.buf, self.pos, None)
            if marker is None and self.buf.startswith("</", end):  # "…value</pa": cut tag
                self._parts.append(self.buf[self.pos : end])
                self.pos = end
                self._member("".join(self._parts))
                self._parts = []
                return self._cut_tag(_PARAM_END)
        text = self._gather(_PARAM_END, special=False)
        if text is None:
            return self._broken("truncated", self._head()) if self.final else False
        self._member(text)
        return True

    def _s_cdata(self) -> bool:
        text = self._gather(_CDATA_END, special=False)
        if text is None:
            return self._broken("truncated", self._head() + _CDATA) if self.final else False
        self._cdata = text
        self.state = _MiniCPM.CDATA_END
        return True

    def _s_cdata_end(self) -> bool:
        hit = self.at_marker(_PARAM_END)
        if hit is None:
            return False
        if not hit:
            if self.final and _PARAM_END.startswith(self.buf[self.pos :]):
                self._member(self._cdata)
                return self._cut_tag(_PARAM_END)
            raw = self._head() + _CDATA + self._cdata + _CDATA_END
            return self._broken("malformed parameters", raw)
        self._member(self._cdata)
        return True

    def _cut_tag(self, tag: str) -> bool:
        """At the end of the stream: the rest is a cut closing ``tag`` (``</functi``) after
        complete parameters — the call stands and the cut tag is text. False if it is not."""
        rest = self.buf[self.pos :]
        if not (rest and tag.startswith(rest) and rest.startswith("</")):
            return False
        self.pos = len(self.buf)
        self._close_call()
        self.out.content(rest)
        return True

    def _member(self, text: str) -> None:
        assert self._members is not None
        schema = parameter_schema(self.out.tool_schema(self._name), self._key)
        self._members.member(self._key, typed_value(text, schema))
        self.state = _MiniCPM.PARAMS

    def _close_call(self) -> bool:
        members = self._members
        assert members is not None
        members.close()
        self.out.check_arguments(members.index)
        self._members = None
        self.end_block()
        return True

    def _broken(self, reason: str, raw: str) -> bool:
        """Flag the open call; ``raw`` (the tags read) and the held text join its arguments,
        then the rest of the call (to ``</function>``) as junk."""
        members = self._members
        assert members is not None
        self.out.args(members.index, raw + "".join(self._parts))
        self._parts = []
        self.out.fail(members.index, reason)
        self._members = None
        self.junk_index = members.index
        self.state = Block.JUNK
        return True
