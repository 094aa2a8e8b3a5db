"""Tencent Hy3 (Hunyuan 3): ``<tool_calls:opensource>`` blocks of
``<tool_call:opensource>NAME<tool_sep:opensource>`` and
``<arg_key:opensource>K</arg_key:opensource><arg_value:opensource>V</arg_value:opensource>``
pairs, ``</tool_call:opensource>``, ``</tool_calls:opensource>`` (newlines between the tags).

Values are text, converted to the type the tool's schema declares (strings kept when no
schema; see :mod:`chatfmt.parsing.xml_values`); the template writes non-strings as JSON. Reasoning is
``<think:opensource>…</think:opensource>`` (the ``hunyuan`` reasoning parser).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.reasoning import think_parser
from ...parsing.states import State
from ...parsing.xml_values import JsonMembers, parameter_schema, typed_value
from .markers import THINK_OPENSOURCE, THINK_OPENSOURCE_CLOSE, TOOL_SEP_OPENSOURCE


def _tag(name: str) -> tuple[str, str]:
    return f"<{name}:opensource>", f"</{name}:opensource>"


_CALLS, _CALLS_END = _tag("tool_calls")
_CALL, _CALL_END = _tag("tool_call")
_SEP = TOOL_SEP_OPENSOURCE
_K, _K_END = _tag("arg_key")
_V, _V_END = _tag("arg_value")
_MAX_HEAD = 256


class _Hunyuan(State):
    """States of :class:`HunyuanParser` beyond :class:`~.blocks.Block`."""

    CALLS = auto()  # between calls
    NAME = auto()  # the tool name
    PAIRS = auto()  # between key/value pairs
    KEY = auto()
    VALUE_HEAD = auto()  # between a key and its value
    VALUE = auto()


class HunyuanParser(BlockParser):
    """States beyond :class:`BlockParser`'s: ``calls`` (between calls), ``name`` and ``key``
    (held until their closing tag, at most :data:`_MAX_HEAD` characters), ``pairs``,
    ``value_head``, ``value`` (collected until ``</arg_value:opensource>``).

    A call that breaks is flagged with its raw text up to ``</tool_call:opensource>``.
    """

    states = _Hunyuan

    name = "hunyuan"
    special_markers: ClassVar[tuple[str, ...]] = (
        _CALLS,
        _CALLS_END,
        _CALL,
        _CALL_END,
        _SEP,
        _K,
        _K_END,
        _V,
        _V_END,
    )
    starts: ClassVar[Mapping[str, State]] = {
        _CALLS: _Hunyuan.CALLS,
        _CALL: _Hunyuan.NAME,
        _CALLS_END: Block.TEXT,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._members: JsonMembers | None = None
        self._name = ""
        self._key = ""

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self.cur_end = _CALL_END
        self._parts = []

    def _s_calls(self) -> bool:
        if not self.skip_ws():
            if self.final:
                self.end_block()
                return True
            return False
        found = self.at_any(_CALL, _CALLS_END)
        if found is None:
            return False
        if found:
            self.state = _Hunyuan.NAME if found == _CALL else Block.TEXT
            return True
        self.end_block()  # other text: content
        return True

    def _s_name(self) -> bool:
        text = self._gather(_SEP, _K, _CALL_END)
        if text is None:
            if not self.final and self._gathered() <= _MAX_HEAD:
                return False
            raw = _CALL + "".join(self._parts)
            self._parts = []
            index = self.out.start_call("", error="truncated" if self.final else "no tool name")
            self.out.args(index, raw)
            self.junk_index = index
            self.state = Block.JUNK
            return True
        self._name = text.strip()
        self._members = JsonMembers(self.out, self.out.start_call(self._name))
        if self._last == _K:
            self.state = _Hunyuan.KEY
        elif self._last == _CALL_END:
            return self._close_call()
        else:
            self.state = _Hunyuan.PAIRS
        return True

    def _s_pairs(self) -> bool:
        if not self.skip_ws():
            if self.final:
                return self._close_call()
            return False
        rest = self.buf[self.pos :]
        if self.final and rest.startswith("</") and _CALL_END.startswith(rest):
            self.pos = len(self.buf)  # "…</tool_ca": the call is complete, the cut tag is text
            self._close_call()
            self.out.content(rest)
            return True
        if self.final and _K.startswith(rest):  # "<arg_k": a further argument was cut off
            return self._broken("truncated", "")
        found = self.at_any(_K, _CALL_END)
        if found is None:
            return False
        if found == _CALL_END:
            return self._close_call()
        if found:
            self.state = _Hunyuan.KEY
            return True
        return self._broken("malformed argument pairs", "")

    def _s_key(self) -> bool:
        text = self._gather(_K_END, _V, _CALL_END)
        if text is None:
            if self.final or self._gathered() > _MAX_HEAD:
                return self._broken("truncated" if self.final else "argument name too long", _K)
            return False
        if self._last != _K_END:
            return self._broken("malformed argument pairs", _K + text + self._last)
        self._key = text.strip()
        self.state = _Hunyuan.VALUE_HEAD
        return True

    def _s_value_head(self) -> bool:
        if not self.skip_ws():
            if self.final:
                return self._broken("truncated", _K + self._key + _K_END)
            return False
        hit = self.at_marker(_V)
        if hit is None:
            return False
        if not hit:
            return self._broken("malformed argument pairs", _K + self._key + _K_END)
        self.state = _Hunyuan.VALUE
        return True

    def _s_value(self) -> bool:
        text = self._gather(_V_END)
        if text is None:
            if self.final:
                return self._broken("truncated", _K + self._key + _K_END + _V)
            return False
        assert self._members is not None
        schema = parameter_schema(self.out.tool_schema(self._name), self._key)
        self._members.member(self._key, typed_value(text, schema))
        self.state = _Hunyuan.PAIRS
        return True

    def _close_call(self) -> bool:
        members = self._members
        assert members is not None
        members.close()
        self.out.check_arguments(members.index)
        self._members = None
        self.state = _Hunyuan.CALLS
        return True

    def _broken(self, reason: str, raw: str) -> bool:
        """Flag the open call; ``raw`` (the tags read) and the held text join its arguments,
        then the rest of the call (to ``</tool_call:opensource>``) as junk."""
        members = self._members
        assert members is not None
        self.out.args(members.index, raw + "".join(self._parts))
        self._parts = []
        self.out.fail(members.index, reason)
        self._members = None
        self.junk_index = members.index
        self.state = Block.JUNK
        return True

    def end_block(self) -> None:
        if self.state is Block.JUNK and self.buf.endswith(_CALL_END, 0, self.pos):
            self.state = _Hunyuan.CALLS  # a broken call ended: more calls may follow
            return
        super().end_block()


HunyuanThinkParser = think_parser(
    "hunyuan", THINK_OPENSOURCE, THINK_OPENSOURCE_CLOSE, qualname="HunyuanThinkParser"
)
