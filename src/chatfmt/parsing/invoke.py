"""The ``<invoke name="…"><parameter name="…">value</parameter></invoke>`` family.

One state machine, configured per family by its markers:

* MiniMax-M2 (``minimax_m2``): ``<minimax:tool_call>`` wrapper, ``<invoke name="f">``,
  ``<parameter name="k">v</parameter>``;
* DeepSeek V3.2 / V4 DSML (``deepseek_v32``, alias ``deepseek_v4``):
  ``<｜DSML｜function_calls>`` (V3.2) or ``<｜DSML｜tool_calls>`` (V4) wrappers,
  ``<｜DSML｜invoke name="f">``, ``<｜DSML｜parameter name="k" string="true|false">v…``;
* MiniMax-M3 (``minimax_m3``): every tag prefixed by ``]<]minimax[>[``; a parameter
  is the element ``<k>v</k>`` and nested objects / arrays are child elements
  (``<item>`` for array members);
* Muse Glimmer's ATEM blocks (``<atem:function_calls>``, see :mod:`chatfmt.families.glimmer.parser`).

Values are text (a closing tag inside a value is text unless markup that may follow a
parameter, or the end of the output, follows it). A parameter whose tool schema declares a type is converted to it
(:func:`~.xml_values.typed_value`); without a schema the text is kept, except a DSML
value marked ``string="false"``, which is read as JSON when it parses. Each finished
parameter is emitted as a JSON member (:class:`~.xml_values.JsonMembers`), so the
argument text is the same however the output is cut.

Policy (``docs/parsing.md``): text outside the wrapper is content; a wrapper with
nothing after it is markup; an invoke whose parameters are complete is valid even
without its closing tags (a cut closing tag is content); a header, parameter or
value cut off, or markup that is not a parameter, flags the call (``truncated`` /
``malformed``) with the raw text up to the end of the invoke (or wrapper); other
text inside the wrapper is a nameless call flagged ``not a tool call``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from .._moved import moved_name
from .base import WS
from .blocks import Block, BlockParser
from .states import State
from .xml_values import JsonMembers, parameter_schema, typed_value

#: The longest tag header (``<invoke name="…">``) held back while waiting for its ``>``.
MAX_HEADER = 1024
_TAG_REST = re.compile(r"""(?:[^>"']|"[^"]*"|'[^']*')*>""")
_ATTR = re.compile(r"""([^\s=>"']+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""")
_MALFORMED = "malformed invoke parameters"
#: Schema keys that declare a parameter's type (see :func:`~.xml_values.typed_value`).
_TYPE_KEYS = ("type", "anyOf", "oneOf", "enum", "properties")


def tag_attributes(header: str) -> dict[str, str]:
    """The ``key="value"`` attributes of a tag header (quotes ``"``/``'`` or none)."""
    return {m[1]: next(v for v in m.groups()[1:] if v is not None) for m in _ATTR.finditer(header)}


def _declares_type(schema: Any) -> bool:
    return isinstance(schema, Mapping) and any(k in schema for k in _TYPE_KEYS)


class Invoke(State):
    """States of :class:`InvokeParser` beyond :class:`~.blocks.Block`."""

    CALLS = auto()  # in the wrapper, between invokes
    HEAD = auto()  # an invoke's header
    PARAMS = auto()  # between parameters
    PARAM_HEAD = auto()  # a parameter's header
    VALUE = auto()  # a parameter's value


class InvokeParser(BlockParser):
    """Wrapper → ``invoke`` (name attribute) → parameters → value (see module doc).

    Configured by class attributes: :attr:`starts` / :attr:`ends` (wrapper
    markers, state :attr:`Invoke.CALLS`), :attr:`invoke_open` (a tag whose header carries
    ``name``), :attr:`invoke_close`, :attr:`param_open` / :attr:`param_close`.
    Subclasses change how a parameter is written (:meth:`_s_param_head`,
    :meth:`value_markers`) and decoded (:meth:`decode`).

    States: :class:`Invoke` and :class:`~.blocks.Block`'s ``TEXT`` and ``JUNK``.
    """

    states: ClassVar[type[State] | None] = Invoke

    invoke_open: ClassVar[str] = "<invoke"
    invoke_close: ClassVar[str] = "</invoke>"
    param_open: ClassVar[str] = "<parameter"
    param_close: ClassVar[str] = "</parameter>"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name = ""
        self._index = 0
        self._key = ""
        self._raw = ""  # the open parameter's tag text, for a broken call's raw arguments
        self._members: JsonMembers | None = None
        self._attrs: Mapping[str, str] = {}
        self._junk_ends: tuple[str, ...] = ()

    # ------------------------------------------------------------------ helpers
    def read_header(self) -> tuple[str, bool] | None:
        """The tag header at ``pos`` up to its ``>`` (consumed): ``(text, complete)``.

        None while it may still complete; ``complete`` False when it cannot
        (the stream ended, or longer than :data:`MAX_HEADER`): then everything
        is consumed and returned.
        """
        m = _TAG_REST.match(self.buf, self.pos)
        if m is not None and m.end() - self.pos <= MAX_HEADER:
            self.pos = m.end()
            return m.group()[:-1], True
        if not self.final and len(self.buf) - self.pos < MAX_HEADER:
            return None
        text = self.buf[self.pos :]
        self.pos = len(self.buf)
        return text, False

    def schema(self, key: str) -> Any:
        return parameter_schema(self.out.tool_schema(self._name), key)

    def decode(self, text: str, attrs: Mapping[str, str], schema: Any) -> Any:
        """A parameter value: converted per its schema; the text when no type is declared."""
        return typed_value(text, schema)

    def value_markers(self) -> tuple[str, ...]:
        """The markers that end the open parameter's value."""
        return (self.param_close,)

    def _fail(self, reason: str, raw: str = "") -> bool:
        """Flag the open call; ``raw`` and the rest of the invoke are its arguments."""
        self.out.args(self._index, raw)
        self.out.fail(self._index, reason)
        self.junk_index = self._index
        self._junk_ends = (self.invoke_close,)
        self._members = None
        self.state = Block.JUNK
        return True

    def _close_call(self) -> None:
        assert self._members is not None
        self._members.close()
        self._members = None
        self.out.check_arguments(self._index)

    # ------------------------------------------------------------------ states
    def _s_calls(self) -> bool:
        if not self.skip_ws():
            if self.final:
                self.end_block()
                return True
            return False
        assert self.cur_end is not None
        hit = self.at_marker(self.cur_end)
        if hit is None:
            return False
        if hit:
            self.end_block()
            return True
        hit = self.at_marker(self.invoke_open)
        if hit is None:
            return False
        if hit:
            self.state = Invoke.HEAD
            return True
        self.junk_index = self.out.start_call("", error="not a tool call")
        self._junk_ends = (self.invoke_open,)
        self.state = Block.JUNK
        return True

    def _s_head(self) -> bool:
        got = self.read_header()
        if got is None:
            return False
        header, complete = got
        is_tag = complete and header[:1] in ("", *WS)  # not "<invoked …>"
        name = tag_attributes(header).get("name", "").strip() if is_tag else ""
        if not name:
            reason = "truncated" if self.final and not complete else "no tool name"
            self._index = self.out.start_call("", error=reason)
            return self._fail(reason, self.invoke_open + header + (">" if complete else ""))
        self._name = name
        self._index = self.out.start_call(name)
        self._members = JsonMembers(self.out, self._index)
        self.state = Invoke.PARAMS
        return True

    def _s_params(self) -> bool:
        if not self.skip_ws():
            if self.final:  # complete parameters, no closing tags
                self._close_call()
                self.end_block()
                return True
            return False
        assert self.cur_end is not None
        for marker in (self.invoke_close, self.cur_end, self.param_open):
            hit = self.at_marker(marker)
            if hit is None:
                return False
            if not hit:
                continue
            if marker == self.param_open:
                self._raw = marker
                self.state = Invoke.PARAM_HEAD
                return True
            self._close_call()
            if marker == self.invoke_close:
                self.state = Invoke.CALLS
            else:
                self.end_block()
            return True
        rest = self.buf[self.pos :]
        if self.final:
            if self.invoke_close.startswith(rest) or self.cur_end.startswith(rest):
                self.pos = len(self.buf)  # a cut closing tag: the call is complete
                self._close_call()
                self.out.content(rest)
                self.end_block()
                return True
            if self.param_open.startswith(rest):
                self.pos = len(self.buf)
                return self._fail("truncated", rest)
        return self._fail(_MALFORMED)

    def _s_param_head(self) -> bool:
        got = self.read_header()
        if got is None:
            return False
        header, complete = got
        self._raw += header + (">" if complete else "")
        if complete and header[:1] in WS:
            self._attrs = tag_attributes(header)
            self._key = self._attrs.get("name", "")
            if self._key:
                self._parts = []
                self.state = Invoke.VALUE
                return True
        return self._fail("truncated" if not complete and self.final else _MALFORMED, self._raw)

    def _s_value(self) -> bool:
        end, marker, resume = self.end_set(*self.value_markers()).split(
            self.buf, self.pos, self.real
        )
        if marker is None and self.final:
            cut = self.buf[end:]
            self._parts.append(self.buf[self.pos : end])
            self.pos = len(self.buf)
            if self.cut_close(cut):  # the value ends in a cut closing tag: complete
                self._member()
                self._close_call()
                self.out.content(cut)
                self.end_block()
                return True
            return self._fail("truncated", self._raw + "".join(self._parts) + cut)
        self._parts.append(self.buf[self.pos : end])
        self.pos = end
        if marker is None:
            return False
        if not self.value_marker(marker):
            closes = self._closes(resume)
            if closes is None:
                return False  # the closing tag stays in the buffer until what follows decides
            if closes:
                self.pos = resume
                self._member()
                self.state = Invoke.PARAMS
                return True
            self._parts.append(marker)  # a closing tag quoted inside the value
        self.pos = resume
        return True

    def _closes(self, at: int) -> bool | None:
        """Whether the closing tag ending at ``at`` ends the value: it does when what follows
        (after whitespace) is markup that may follow a parameter, or the end of the output;
        None while undecided."""
        buf, n = self.buf, len(self.buf)
        while at < n and buf[at] in WS:
            at += 1
        if at == n:
            return True if self.final else None
        assert self.cur_end is not None
        rest = buf[at:]
        for marker in (self.param_open, self.invoke_close, self.cur_end):
            if rest.startswith(marker):
                return True
            if marker.startswith(rest):  # cut: wait, or at the end of output it follows
                return True if self.final else None
        return False

    def value_marker(self, marker: str) -> bool:
        """A marker inside a value that does not end it (kept as value text): True."""
        return False

    def cut_close(self, cut: str) -> bool:
        """Whether output ending in ``cut`` (a held-back marker prefix) ended in the value's
        closing tag (at least its ``</``), so the value is complete."""
        return len(cut) >= 2 and self.param_close.startswith(cut)

    def _member(self) -> None:
        text = "".join(self._parts)
        self._parts = []
        assert self._members is not None
        self._members.member(self._key, self.decode(text, self._attrs, self.schema(self._key)))

    def _s_junk(self) -> bool:
        """A broken call's (or stray) text, up to the end of its invoke or of the wrapper."""
        assert self.junk_index is not None and self.cur_end is not None
        ends = (*self._junk_ends, self.cur_end)
        end, marker, resume = self.end_set(*ends).split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        self.out.args(self.junk_index, self.buf[self.pos : end])
        self.pos = resume
        if marker is None:
            return False
        self.junk_index = None
        if marker == self.cur_end:
            self.end_block()
        else:
            self.state = Invoke.HEAD if marker == self.invoke_open else Invoke.CALLS
        return True


def invoke_parser(
    name: str,
    calls: tuple[str, str],
    invoke: tuple[str, str] = ("<invoke", "</invoke>"),
    parameter: tuple[str, str] = ("<parameter", "</parameter>"),
    special: tuple[str, ...] = (),
) -> type[InvokeParser]:
    """An :class:`InvokeParser` for other markers: ``calls`` is the wrapper (open, close),
    ``invoke`` / ``parameter`` the tag openings (``<invoke``, without ``>``) and closing
    tags; ``special`` the markers that are single special tokens. Not registered."""
    attrs = {
        "name": name,
        "starts": {calls[0]: Invoke.CALLS},
        "end": calls[1],
        "invoke_open": invoke[0],
        "invoke_close": invoke[1],
        "param_open": parameter[0],
        "param_close": parameter[1],
        "special_markers": special,
        "__doc__": f"``{calls[0]}{invoke[0]} name=…>{parameter[0]} name=…>`` calls.",
        "__module__": __name__,
    }
    return type(f"InvokeParser_{name}", (InvokeParser,), attrs)


def __getattr__(name: str) -> Any:
    # Names that moved to a family package keep working for one release (with a warning).
    return moved_name(__name__, name)
