"""Qwen3-Coder / Qwen3.5 / Step-3.5 / Nemotron-3 and Seed-OSS XML-parameter tool calls.

One call is written::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

Seed-OSS wraps the same body in ``<seed:tool_call>…</seed:tool_call>`` and writes
values without the surrounding newlines (``<parameter=city>Paris</parameter>``).
A value is raw text: exactly one newline right after ``<parameter=k>`` and one
right before ``</parameter>`` (the ones the Qwen templates write; none for Seed-OSS)
are markup, the rest is the value, converted by the tool's JSON schema (:func:`~.xml_values.typed_value`;
a string when no schema is given). String values are streamed as they come.

Where a value ends (the format's facts, as vLLM, SGLang and llama.cpp read it):

* at ``</parameter>`` followed (after whitespace) by ``<parameter=``,
  ``</function>``, the block's end marker or the end of the output. A
  ``</parameter>`` followed by anything else is part of the value (a model
  writing code or XML that contains the tag);
* a missing ``</parameter>``: a line that starts with ``<parameter=`` or
  ``</function>`` ends the value (vLLM's ``missing_closing_parameter_tag`` case).

Several ``<function=…>`` blocks may share one wrapper, and a JSON call object
inside the wrapper (the Hermes form some checkpoints fall back to) is read as
such. Robustness follows ``docs/parsing.md``: output cut inside a closing tag is a
complete call plus the cut tag as content; cut inside a name, key or value gives
a call flagged ``truncated``; anything else malformed is flagged with its raw text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from .._moved import moved_name
from .base import WS, Emitter
from .blocks import Block, BlockParser
from .special import SpecialTokens
from .states import State
from .xml_values import JsonMembers, _types, parameter_schema, typed_value

_FN, _FN_END = "<function=", "</function>"
_P, _P_END = "<parameter=", "</parameter>"
#: Longest tool name / parameter key read before the header is declared broken.
_MAX_HEAD = 256
#: Longest whitespace run after ``</parameter>`` examined before it counts as value text.
_MAX_GAP = 256
_MALFORMED = "malformed <function=…>/<parameter=…> markup"


def _is_text(schema: Any) -> bool:
    """Whether a parameter's value is always its text (no schema, or only ``string``)."""
    kinds = _types(schema)
    return not kinds or kinds == ["string"]


class Qwen3Coder(State):
    """States of :class:`Qwen3CoderParser` beyond :class:`~.blocks.Block`."""

    FN_NAME = auto()  # ``<function=NAME>``
    PARAMS = auto()  # between parameters
    KEY = auto()  # ``<parameter=KEY>``
    VALUE = auto()  # a parameter's value
    VALUE_CLOSE = auto()  # is this ``</parameter>`` the end?


class Qwen3CoderParser(BlockParser):
    """``<tool_call><function=name><parameter=k>v</parameter>…</function></tool_call>`` (see module doc).

    Subclasses set the wrapper (``starts``, ``end`` and :attr:`close_marker`, the same).
    States: :class:`Qwen3Coder` and :class:`~.blocks.Block`'s (``GAP``: inside a wrapper,
    between functions; ``JUNK``: the rest of a broken block).
    """

    states = Qwen3Coder

    name = "qwen3_coder"
    close_marker: ClassVar[str] = "</tool_call>"
    #: Whether the template writes a newline after ``<parameter=k>`` and before
    #: ``</parameter>`` (markup, dropped once each), or the value right between the tags.
    value_newlines: ClassVar[bool] = True
    special_markers = ("<tool_call>", "</tool_call>")
    starts: ClassVar[Mapping[str, State]] = {"<tool_call>": Block.GAP, _FN: Qwen3Coder.FN_NAME}
    end = "</tool_call>"
    ends: ClassVar[Mapping[str, str | None]] = {_FN: _FN_END}

    def __init__(self, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]) -> None:
        super().__init__(out, budget, options)
        self._fn_name = ""
        self._index = 0
        self._members: JsonMembers | None = None
        self._key = ""
        self._schema: Any = None
        self._streaming = False  # the value is streamed as a JSON string
        self._parts: list[str] = []  # buffered value text (typed values)
        self._lead = True  # the value's leading newline is still to be dropped
        self._dropped = ""  # the leading newline dropped (for the raw text of a cut value)
        self._held = ""  # a trailing newline held back (the one before </parameter>)
        self._value_ends = (_P_END, "\n" + _P, "\n" + _FN_END)
        self._after_close = (_P, _FN_END, self.close_marker)
        self._bare = False  # a <function=…> written without the wrapper
        self._line_start = True  # the text so far ends a line (or nothing was written yet)

    # ------------------------------------------------------------------ text
    def _s_text(self) -> bool:
        """Content up to a wrapper, or a bare ``<function=`` at the start of a line (the
        wrapper some checkpoints leave out; elsewhere in prose it is text)."""
        end, marker, resume = self.text_markers.split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        text = self.buf[self.pos : end]
        if text:
            self.out.content(text)
            self._line_start = text.endswith("\n")
        self.pos = resume
        if marker is None:
            return False
        if marker == _FN and not self._line_start:
            self.out.content(marker)
            return True
        self.enter(marker)
        self._bare = marker == _FN
        return True

    def end_block(self) -> None:
        super().end_block()
        self._bare = False
        self._line_start = True

    # ------------------------------------------------------------------ wrapper
    def _s_gap(self) -> bool:
        if not self.skip_ws():
            return False
        hit = self.at_marker(_FN)
        if hit is None:
            return False
        if hit:
            self.state = Qwen3Coder.FN_NAME
            return True
        return super()._s_gap()  # the end marker, a JSON call object, or junk

    def _head(self) -> tuple[str | None, bool]:
        """A ``name>`` header at ``pos``: (name, done); (None, False) while undecided."""
        buf, pos = self.buf, self.pos
        close = buf.find(">", pos, pos + _MAX_HEAD)
        if close < 0:
            if not self.final and len(buf) - pos < _MAX_HEAD:
                return None, False
            return buf[pos:], False
        name = buf[pos:close]
        if "<" in name or "\n" in name:
            return name, False
        self.pos = close + 1
        return name.strip(), True

    def _s_fn_name(self) -> bool:
        name, done = self._head()
        if name is None:
            return False
        if not done:
            if self.final and "<" not in name and "\n" not in name:  # cut inside the name
                self.out.start_call(name.strip(), error="truncated")
                self.pos = len(self.buf)
                self.end_block()
                return True
            self.junk_index = self.out.start_call("", error="no tool name")
            self.out.args(self.junk_index, _FN)
            self.state = Block.JUNK
            return True
        self._fn_name = name
        self._index = self.out.start_call(name)
        self._members = JsonMembers(self.out, self._index)
        self.state = Qwen3Coder.PARAMS
        return True

    # ------------------------------------------------------------------ parameters
    def _s_params(self) -> bool:
        if not self.skip_ws():
            if self.final:  # all parameters closed, </function> missing: a complete call
                self._close_call()
                self.end_block()
                return True
            return False
        ends: tuple[tuple[str, State | None], ...] = (
            (_P, Qwen3Coder.KEY),
            (_FN_END, None),
            (self.close_marker, Block.TEXT),
        )
        for marker, state in ends:
            hit = self.at_marker(marker)
            if hit is None:
                return False
            if hit:
                if state is None:
                    self._close_call()
                    if self._bare:
                        self.end_block()
                    else:
                        self.state = Block.GAP
                    return True
                if state is Block.TEXT:  # the wrapper closed without </function>
                    self._close_call()
                    self.end_block()
                    return True
                self.state = state
                return True
        rest = self.buf[self.pos :]
        if self.final and (_FN_END.startswith(rest) or self.close_marker.startswith(rest)):
            self.pos = len(self.buf)  # cut in a closing tag: the call is complete
            self._close_call()
            self.out.content(rest)
            self.end_block()
            return True
        if self.final and _P.startswith(rest):
            return self._broken("truncated")  # a further parameter was cut off
        return self._broken(_MALFORMED)

    def _close_call(self) -> bool:
        members = self._members
        assert members is not None
        members.close()
        self.out.check_arguments(self._index)
        self._members = None
        self.block_calls += 1
        return True

    def _broken(self, reason: str) -> bool:
        """Flag the open call; its arguments so far stay, the rest of the block is junk."""
        self.out.fail(self._index, reason)
        self._members = None
        self.junk_index = self._index
        self.state = Block.JUNK
        return True

    def _s_key(self) -> bool:
        key, done = self._head()
        if key is None:
            return False
        if not done:
            if self.final and "<" not in key and "\n" not in key:  # cut inside the key
                self.pos = len(self.buf)
                self.out.args(self._index, _P + key)
                return self._broken("truncated")
            self.out.args(self._index, _P)  # the junk state appends the rest
            return self._broken(_MALFORMED)
        self._key = key
        self._schema = parameter_schema(self.out.tool_schema(self._fn_name), key)
        self._streaming = _is_text(self._schema)
        self._parts = []
        self._lead = True
        self._dropped = self._held = ""
        if self._streaming:
            assert self._members is not None
            self._members.key(key, '"')
        self.state = Qwen3Coder.VALUE
        return True

    # ------------------------------------------------------------------ values
    def _value_text(self, text: str) -> None:
        """More value text: the leading newline dropped, a trailing newline held back."""
        if not text:
            return
        if self._lead:
            self._lead = False
            if text.startswith("\n") and self.value_newlines:
                text, self._dropped = text[1:], "\n"
                if not text:
                    return
        text = self._held + text
        self._held = ""
        if text.endswith("\n") and self.value_newlines:
            text, self._held = text[:-1], "\n"
        if not text:
            return
        if self._streaming:
            self.out.args(self._index, json.dumps(text, ensure_ascii=False)[1:-1])
        else:
            self._parts.append(text)

    def _end_value(self) -> None:
        """The value is complete: emit it (the held newline is markup)."""
        self._held = ""
        if self._streaming:
            self.out.args(self._index, '"')
        else:
            members = self._members
            assert members is not None
            members.member(self._key, typed_value("".join(self._parts), self._schema))
        self._parts = []

    def _s_value(self) -> bool:
        end, marker, _ = self.end_set(*self._value_ends).split(self.buf, self.pos, self.real)
        if marker is None and self.final:
            return self._value_cut()
        self._value_text(self.buf[self.pos : end])
        self.pos = end
        if marker is None:
            return False
        if marker == _P_END:
            self.state = Qwen3Coder.VALUE_CLOSE
            return True
        self.pos = end + 1  # a missing </parameter>: the newline ends the value
        self._end_value()
        self.state = Qwen3Coder.PARAMS
        return True

    def _s_value_close(self) -> bool:
        """At a ``</parameter>``: it ends the value if the next markup follows (see module doc)."""
        buf = self.buf
        after = self.pos + len(_P_END)
        at = after
        while at < len(buf) and buf[at] in WS and at - after < _MAX_GAP:
            at += 1
        rest = buf[at : at + len(self.close_marker)]
        if at - after >= _MAX_GAP:
            ends = False
        elif at == len(buf):
            if not self.final:
                return False
            ends = True
        elif any(rest.startswith(m) for m in self._after_close):
            ends = True
        elif any(m.startswith(rest) for m in self._after_close):
            if not self.final:
                return False  # a possible next tag, cut by the chunk
            ends = True  # the output ends inside the next tag
        else:
            ends = False
        if ends:
            self.pos = after
            self._end_value()
            self.state = Qwen3Coder.PARAMS
            return True
        self._value_text(buf[self.pos : after])  # a look-alike: value text
        self.pos = after
        self.state = Qwen3Coder.VALUE
        return True

    def _value_cut(self) -> bool:
        """The output ended inside a value (no closing tag found)."""
        buf = self.buf
        tail = buf[self.pos :]
        cut = tail.rfind("</")
        if cut >= 0 and _P_END.startswith(tail[cut:]):
            # a value followed by a cut </parameter>: complete; the call too, the tag is text
            self._value_text(tail[:cut])
            self.pos = len(buf)
            self._end_value()
            self._close_call()
            self.out.content(tail[cut:])
            self.end_block()
            return True
        self._value_text(tail)
        self.pos = len(buf)
        text = self._held
        self._held = ""
        if self._streaming:
            self.out.args(self._index, json.dumps(text, ensure_ascii=False)[1:-1])
        else:
            raw = _P + self._key + ">" + self._dropped + "".join(self._parts) + text
            self.out.args(self._index, raw)
        return self._broken("truncated")


def __getattr__(name: str) -> Any:
    # Names that moved to a family package keep working for one release (with a warning).
    return moved_name(__name__, name)
