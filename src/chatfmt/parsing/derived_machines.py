"""The parsers a derived format is built on: :class:`NamedArgsParser` and one factory per
encoding, each configuring an existing machine with the markers found in the template."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from enum import auto
from typing import ClassVar

from .base import FormatParser
from .blocks import Block, BlockParser, RawArgs
from .derived_format import DerivedFormat
from .states import State

_MAX_HEAD = 512
_NAME = re.compile(r"[A-Za-z0-9_.\-:]*")


class _NamedArgs(State):
    """States of :class:`NamedArgsParser` beyond :class:`~.blocks.Block`."""

    NX_ID_FIRST = auto()  # a call id before the name
    NX_GAP = auto()  # between calls of a block
    NX_HEAD = auto()  # the tool name
    NX_ID = auto()  # a call id after the name
    NX_ARGS = auto()  # the JSON arguments
    NX_TAIL = auto()  # an optional call end marker


class NamedArgsParser(BlockParser):
    """``[calls_begin] call_begin NAME name_sep {json} call_end [separator] … [calls_end]``.

    Configured by class attributes (see :func:`_named_args_class`). Text before the
    first marker and after the block is content; broken arguments flag the call and
    the rest of it (to ``call_end``) is kept as its raw text.
    """

    states = _NamedArgs

    calls_begin: ClassVar[str] = ""
    calls_end: ClassVar[str] = ""
    call_begin: ClassVar[str] = ""
    call_end: ClassVar[str] = ""
    name_sep: ClassVar[str] = ""
    id_end: ClassVar[str] = ""
    name_open: ClassVar[str] = ""
    separator: ClassVar[str] = ""

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self.cur_end = self.call_end or self.calls_end or None
        self.state = (
            _NamedArgs.NX_GAP
            if marker == self.calls_begin and self.calls_begin
            else self._head_state
        )

    @property
    def _head_state(self) -> State:
        return _NamedArgs.NX_ID_FIRST if self.name_open else _NamedArgs.NX_HEAD

    def _s_nx_id_first(self) -> bool:
        """A call id before the name: skipped up to :attr:`name_open` (bounded)."""
        window = self.buf[: self.pos + _MAX_HEAD]
        _end, marker, resume = self.end_set(self.name_open).split(window, self.pos, self.real)
        if marker is None and not self.final and len(window) < self.pos + _MAX_HEAD:
            return False
        if marker is None:  # no name marker after the id: not a call
            self.junk_index = self.out.start_call("", error="no tool name")
            self.block_calls += 1
            self.state = Block.JUNK
            return True
        self.pos = resume
        self.state = _NamedArgs.NX_HEAD
        return True

    def _hit(self, marker: str) -> bool | None:
        return self.at_marker(marker) if marker else False

    def _s_nx_gap(self) -> bool:
        """Between calls of a block: a separator, the next call, the block's end, or text."""
        start = self.pos
        if (done := self.skip_gap()) is not None:
            return done
        for marker, state in (
            (self.call_begin, self._head_state),
            (self.separator.strip(), _NamedArgs.NX_GAP),
            (self.calls_end, Block.TEXT),
        ):
            hit = self._hit(marker)
            if hit is None:
                self.pos = start
                return False
            if hit:
                self.state = state
                return True
        if not self.calls_begin and self.block_calls:
            self.pos = start  # the text after a call is content again
        self.end_block()
        return True

    def _s_nx_head(self) -> bool:
        """The tool name, up to :attr:`name_sep`."""
        if not self.skip_ws():
            if self.final:
                self.out.start_call("", error="truncated")
                self.end_block()
                return True
            return False
        if self.name_sep:
            ends = tuple(m for m in (self.name_sep, self.call_end) if m)
            window = self.buf[: self.pos + _MAX_HEAD]  # a name is never longer (stream ≡ whole)
            end, marker, resume = self.end_set(*ends).split(window, self.pos, self.real)
            if marker is None and not self.final and len(window) < self.pos + _MAX_HEAD:
                return False
            if marker is None and len(window) == self.pos + _MAX_HEAD:
                self.junk_index = self.out.start_call("", error="no tool name")
                self.block_calls += 1
                self.state = Block.JUNK
                return True
            if marker is None:
                end = resume = len(self.buf)
        else:
            end = resume = _NAME.match(self.buf, self.pos, self.pos + _MAX_HEAD).end()  # type: ignore[union-attr]
            marker = self.name_sep if end < min(len(self.buf), self.pos + _MAX_HEAD) else None
            if marker is None and not self.final and end - self.pos < _MAX_HEAD:
                return False
        name = self.buf[self.pos : end].strip()
        self.pos = resume
        if marker != self.name_sep or not name:
            index = self.out.start_call(
                name, error="truncated" if marker is None else "no arguments"
            )
            self.out.args(index, "")
            self.block_calls += 1
            self.state = _NamedArgs.NX_GAP if marker is not None else Block.TEXT
            return True
        self.raw = RawArgs(self.out, self.out.start_call(name))
        self.state = _NamedArgs.NX_ID if self.id_end else _NamedArgs.NX_ARGS
        return True

    def _s_nx_id(self) -> bool:
        """A call id after the name: skipped up to :attr:`id_end` (bounded)."""
        _end, marker, resume = self.end_set(self.id_end).split(self.buf, self.pos, self.real)
        if marker is None and not self.final and len(self.buf) - self.pos < _MAX_HEAD:
            return False
        self.pos = resume if marker is not None else self.pos
        self.state = _NamedArgs.NX_ARGS
        return True

    def _s_nx_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        self.block_calls += 1
        self.state = Block.JUNK if status == "failed" else _NamedArgs.NX_TAIL
        return True

    def _s_nx_tail(self) -> bool:
        start = self.pos
        if (done := self.skip_gap()) is not None:
            return done
        hit = self._hit(self.call_end)
        if hit is None:
            self.pos = start
            return False
        if not hit:
            self.pos = start
        self.state = _NamedArgs.NX_GAP
        return True

    def end_block(self) -> None:
        super().end_block()
        self.cur_end = self.call_end or self.calls_end or None


def _special(fmt: DerivedFormat, tokens: frozenset[str]) -> tuple[str, ...]:
    markers = (
        fmt.calls_begin,
        fmt.calls_end,
        fmt.call_begin,
        fmt.call_end,
        fmt.name_sep,
        fmt.id_end,
        fmt.name_open,
    )
    return tuple(dict.fromkeys(m for m in markers if m and m in tokens))


def _named_args_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    start = fmt.calls_begin or fmt.call_begin
    attrs = {
        "name": name,
        "special_markers": _special(fmt, tokens),
        "starts": {start: _NamedArgs.NX_GAP},
        "calls_begin": fmt.calls_begin,
        "calls_end": fmt.calls_end,
        "call_begin": fmt.call_begin,
        "call_end": fmt.call_end,
        "name_sep": fmt.name_sep,
        "id_end": fmt.id_end,
        "name_open": fmt.name_open,
        "separator": fmt.separator,
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template}.",
    }
    return type(f"Derived_{name}", (NamedArgsParser,), attrs)


def _block_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    start = fmt.calls_begin or fmt.call_begin
    attrs = {
        "name": name,
        "special_markers": _special(fmt, tokens),
        "starts": {start: Block.GAP},
        "end": (fmt.calls_end or fmt.call_end) or None,
        "name_keys": (fmt.name_key,),
        "args_keys": tuple(dict.fromkeys((fmt.args_key, "arguments", "parameters"))),
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template}.",
    }
    return type(f"Derived_{name}", (BlockParser,), attrs)


def _bare_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    attrs = {
        "name": name,
        "special_markers": (),
        "starts": {"{": Block.GAP},
        "ends": {},
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template} (bare JSON call objects).",
    }
    base = _machine("chatfmt.families.llama.parser", "Llama3JsonParser", fmt.encoding or "")
    return type(f"Derived_{name}", (base,), attrs)


def _pairs_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    markers = (
        fmt.call_begin,
        fmt.call_end,
        fmt.key_open,
        fmt.key_close,
        fmt.value_open,
        fmt.value_close,
    )
    base = _machine("chatfmt.families.glm.parser", "GLM45Parser", fmt.encoding or "")
    attrs = {
        "name": name,
        "special_markers": tuple(m for m in markers if m in tokens),
        "starts": {fmt.call_begin: base.states.NAME},  # type: ignore[union-attr]
        "end": fmt.call_end,
        "key_open": fmt.key_open,
        "key_close": fmt.key_close,
        "value_open": fmt.value_open,
        "value_close": fmt.value_close,
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template} (XML-style key/value pairs).",
    }
    return type(f"Derived_{name}", (base,), attrs)


def _machine(module: str, cls: str, encoding: str) -> type[BlockParser]:
    """A machine a derived parser is built on: a shared one in this package or a family's
    (imported on first use; its module may be absent)."""
    path = module if module.startswith("chatfmt.") else f"{__package__}.{module}"
    try:
        found: type[BlockParser] = getattr(importlib.import_module(path), cls)
    except (ImportError, AttributeError):
        raise _NoMachine(encoding) from None
    return found


class _NoMachine(Exception):
    """The machine an encoding is built on is not available in this build."""


def _function_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    base = _machine("xml_function", "Qwen3CoderParser", "xml_function")
    wrapper = tuple(m for m in (fmt.call_begin, fmt.call_end) if m)
    fn_name = base.state_named("fn_name")
    attrs = {
        "name": name,
        "open_marker": fmt.call_begin,
        "close_marker": fmt.call_end,
        "special_markers": tuple(m for m in wrapper if m in tokens),
        "starts": {fmt.call_begin: Block.GAP, "<function=": fn_name}
        if fmt.call_begin
        else {"<function=": fn_name},
        "end": fmt.call_end or None,
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template} (<function=…><parameter=…>).",
    }
    return type(f"Derived_{name}", (base,), attrs)


def _pythonic_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    base = _machine("pythonic", "PythonicParser", "pythonic")
    if fmt.call_begin:
        starts: dict[str, State] = {fmt.call_begin: base.state_named("py_block")}
        ends: dict[str, str | None] = {fmt.call_begin: fmt.call_end or None}
    else:
        starts, ends = {"[": base.state_named("py_bare")}, {}
    attrs = {
        "name": name,
        "special_markers": tuple(m for m in (fmt.call_begin, fmt.call_end) if m and m in tokens),
        "starts": starts,
        "ends": ends,
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template} (pythonic calls).",
    }
    return type(f"Derived_{name}", (base,), attrs)


#: Parser factories per encoding: ``(format, parser name, the template's special tokens) -> class``.
FACTORIES: dict[str, Callable[[DerivedFormat, str, frozenset[str]], type[FormatParser]]] = {
    "json_arguments": _named_args_class,
    "json_call": _block_class,
    "json_list": _block_class,
    "bare_json_call": _bare_class,
    "xml_pairs": _pairs_class,
    "xml_function": _function_class,
    "pythonic": _pythonic_class,
}
