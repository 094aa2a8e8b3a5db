"""Parsers derived from a Jinja chat template, for templates without a parser of their own.

:func:`derive_parser` renders probe conversations through the template — a plain
answer, one tool call with known name and arguments (a string, an integer and a
nested object), two calls, and an answer with ``reasoning_content`` — and diffs
the rendered turns to find the markers around the calls block, each call, the
name and the arguments, and around the reasoning. It classifies how a call is
written (:data:`ENCODINGS`) and builds the parser from the existing machines: a
:class:`~.blocks.BlockParser` configured with the found markers (JSON call
objects or lists), :class:`NamedArgsParser` (name outside, JSON arguments), the
Llama 3 JSON machine (bare call objects), and :func:`~.reasoning.think_parser`
for the reasoning block. Every derived parser is checked on the template's own
rendered calls before it is used.

A template whose tool calls cannot be classified (or whose derived parser does
not read its own rendering back) raises :class:`~chatfmt.errors.ParseError`
naming the template and what was found; a template that renders no tool calls
parses as plain content (with the derived reasoning block, if any).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import re
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ..errors import ChatFmtError, ParseError
from .base import (
    REASONING_PARSERS,
    TOOL_PARSERS,
    FormatParser,
    _freeze,
    parse,
)
from .blocks import BlockParser, RawArgs
from .chatglm import GLM45Parser
from .llama3 import Llama3JsonParser
from .reasoning import ThinkParser, think_parser

PROBE_NAME, PROBE_NAME_2 = "chatfmt_probe_fn", "chatfmt_probe_two"
PROBE_ARGS: dict[str, Any] = {"text": "probe-alpha", "count": 42, "opts": {"flag": True}}
PROBE_ARGS_2: dict[str, Any] = {"text": "probe-beta", "count": 7, "opts": {"flag": False}}
PROBE_CONTENT, PROBE_REASONING = "chatfmt probe answer", "chatfmt probe thought"
_USER = [{"role": "user", "content": "chatfmt probe question"}]
_PROPS = {"text": {"type": "string"}, "count": {"type": "integer"}, "opts": {"type": "object"}}
PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": "A probe tool.",
            "parameters": {"type": "object", "properties": _PROPS, "required": ["text"]},
        },
    }
    for name in (PROBE_NAME, PROBE_NAME_2)
]

#: How a derived format writes a call, with what each means.
ENCODINGS: Mapping[str, str] = {
    "json_arguments": "name outside, then a JSON object of arguments: <call>NAME<sep>{args}<end>",
    "json_call": 'JSON call objects {"name": …, "arguments": …} between markers (Hermes-like)',
    "json_list": "a JSON list of call objects after a marker ([TOOL_CALLS][…]-like)",
    "bare_json_call": "call objects written without any marker (Llama 3 JSON-like)",
    "xml_pairs": "name, then <key>k</key><value>v</value> pairs (GLM-4.5-like), values typed by the schema",
    "xml_function": "<function=name><parameter=k>v</parameter>… (Qwen3-Coder-like), values typed by the schema",
    "pythonic": "Python call syntax [f(a=1, b='x')] read as literals (never evaluated)",
}

_MAX_HEAD = 512
#: Marker-like units (special tokens, tags) compared whole when markers are diffed.
_ATOM = re.compile(r"<[^<>\s]{1,80}>|\[/?[A-Za-z_]{2,32}\]|\s+|.", re.S)
#: A reasoning marker must be one such unit (e.g. ``<think>``, ``[THINK]``, ``<seed:think>``).
_TAG = re.compile(r"<[^<>\s]{1,80}>|\[/?[A-Za-z_]{2,32}\]")
_NAME = re.compile(r"[A-Za-z0-9_.\-:]*")


@dataclass(frozen=True)
class DerivedFormat:
    """What :func:`derive_parser` found in a template (see module doc)."""

    #: The template's name (and where it came from).
    template: str
    #: Key of :data:`ENCODINGS`, or ``None`` when the template renders no tool calls.
    encoding: str | None
    #: Markers around the whole calls block (``""``: none).
    calls_begin: str = ""
    calls_end: str = ""
    #: Markers around each call (``""``: none).
    call_begin: str = ""
    call_end: str = ""
    #: Between the name and the arguments (``json_arguments``).
    name_sep: str = ""
    #: Between two calls, besides their markers (e.g. ``,``).
    separator: str = ""
    #: After a call id written between :attr:`name_sep` and the arguments (``[ARGS]``).
    id_end: str = ""
    #: Before the name when a call id comes first (``<call>ID<name_open>NAME…``).
    name_open: str = ""
    #: XML-style parameters: ``key_open KEY key_close value_open VALUE value_close``.
    key_open: str = ""
    key_close: str = ""
    value_open: str = ""
    value_close: str = ""
    #: Keys of a JSON call object.
    name_key: str = "name"
    args_key: str = "arguments"
    #: Markers around the reasoning block, if the template renders one.
    reasoning: tuple[str, str] | None = None
    #: Observations worth telling (why there are no calls, a reasoning form not derived, …).
    notes: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        """A readable account of the derived format."""
        lines = [f"parser derived from template {self.template}"]
        if self.encoding is None:
            lines.append("tool calls: none rendered (output is plain content)")
        else:
            lines.append(f"tool calls: {self.encoding} — {ENCODINGS[self.encoding]}")
            for label, value in (
                ("calls block", _pair(self.calls_begin, self.calls_end)),
                ("each call", _pair(self.call_begin, self.call_end)),
                ("name/arguments separator", repr(self.name_sep) if self.name_sep else ""),
                ("call id, then", repr(self.id_end) if self.id_end else ""),
                ("call id, then the name after", repr(self.name_open) if self.name_open else ""),
                ("between calls", repr(self.separator) if self.separator else ""),
            ):
                if value:
                    lines.append(f"  {label}: {value}")
            if self.key_open:
                spelled = (
                    f"{self.key_open}KEY{self.key_close}{self.value_open}VALUE{self.value_close}"
                )
                lines.append(f"  parameters: {spelled!r}")
            if self.encoding in ("json_call", "json_list", "bare_json_call"):
                lines.append(f"  keys: name {self.name_key!r}, arguments {self.args_key!r}")
        if self.reasoning:
            lines.append(f"reasoning: {_pair(*self.reasoning)}")
        else:
            lines.append("reasoning: none found")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def _pair(begin: str, end: str) -> str:
    if not begin and not end:
        return ""
    return f"{begin!r} … {end!r}"


# ---------------------------------------------------------------------- parsers
class NamedArgsParser(BlockParser):
    """``[calls_begin] call_begin NAME name_sep {json} call_end [separator] … [calls_end]``.

    Configured by class attributes (see :func:`_named_args_class`). Text before the
    first marker and after the block is content; broken arguments flag the call and
    the rest of it (to ``call_end``) is kept as its raw text.
    """

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
            "nx_gap" if marker == self.calls_begin and self.calls_begin else self._head_state
        )

    @property
    def _head_state(self) -> str:
        return "nx_id_first" if self.name_open else "nx_head"

    def _s_nx_id_first(self) -> bool:
        """A call id before the name: skipped up to :attr:`name_open` (bounded)."""
        window = self.buf[: self.pos + _MAX_HEAD]
        _end, marker, resume = self.end_set(self.name_open).split(window, self.pos, self.real)
        if marker is None and not self.final and len(window) < self.pos + _MAX_HEAD:
            return False
        if marker is None:  # no name marker after the id: not a call
            self.junk_index = self.out.start_call("", error="no tool name")
            self.block_calls += 1
            self.state = "junk"
            return True
        self.pos = resume
        self.state = "nx_head"
        return True

    def _hit(self, marker: str) -> bool | None:
        return self.at_marker(marker) if marker else False

    def _s_nx_gap(self) -> bool:
        """Between calls of a block: a separator, the next call, the block's end, or text."""
        start = self.pos
        if not self.skip_ws():
            if self.final:
                self.end_block()
                return True
            self.pos = start
            return False
        for marker, state in (
            (self.call_begin, self._head_state),
            (self.separator.strip(), "nx_gap"),
            (self.calls_end, "text"),
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
                self.state = "junk"
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
            self.state = "nx_gap" if marker is not None else "text"
            return True
        self.raw = RawArgs(self.out, self.out.start_call(name))
        self.state = "nx_id" if self.id_end else "nx_args"
        return True

    def _s_nx_id(self) -> bool:
        """A call id after the name: skipped up to :attr:`id_end` (bounded)."""
        _end, marker, resume = self.end_set(self.id_end).split(self.buf, self.pos, self.real)
        if marker is None and not self.final and len(self.buf) - self.pos < _MAX_HEAD:
            return False
        self.pos = resume if marker is not None else self.pos
        self.state = "nx_args"
        return True

    def _s_nx_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        self.block_calls += 1
        self.state = "junk" if status == "failed" else "nx_tail"
        return True

    def _s_nx_tail(self) -> bool:
        start = self.pos
        if not self.skip_ws():
            if self.final:
                self.end_block()
                return True
            self.pos = start
            return False
        hit = self._hit(self.call_end)
        if hit is None:
            self.pos = start
            return False
        if not hit:
            self.pos = start
        self.state = "nx_gap"
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
        "starts": {start: "nx"},
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
        "starts": {start: "block"},
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
        "starts": {"{": "json"},
        "ends": {},
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template} (bare JSON call objects).",
    }
    return type(f"Derived_{name}", (Llama3JsonParser,), attrs)


def _pairs_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    markers = (
        fmt.call_begin,
        fmt.call_end,
        fmt.key_open,
        fmt.key_close,
        fmt.value_open,
        fmt.value_close,
    )
    attrs = {
        "name": name,
        "special_markers": tuple(m for m in markers if m in tokens),
        "starts": {fmt.call_begin: "name"},
        "end": fmt.call_end,
        "key_open": fmt.key_open,
        "key_close": fmt.key_close,
        "value_open": fmt.value_open,
        "value_close": fmt.value_close,
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template} (XML-style key/value pairs).",
    }
    return type(f"Derived_{name}", (GLM45Parser,), attrs)


def _machine(module: str, cls: str, encoding: str) -> type[FormatParser]:
    """A family machine a derived parser is built on (its module may be absent)."""
    try:
        found: type[FormatParser] = getattr(importlib.import_module(f"{__package__}.{module}"), cls)
    except (ImportError, AttributeError):
        raise _NoMachine(encoding) from None
    return found


class _NoMachine(Exception):
    """The machine an encoding is built on is not available in this build."""


def _function_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    base = _machine("qwen3_coder", "Qwen3CoderParser", "xml_function")
    wrapper = tuple(m for m in (fmt.call_begin, fmt.call_end) if m)
    attrs = {
        "name": name,
        "open_marker": fmt.call_begin,
        "close_marker": fmt.call_end,
        "special_markers": tuple(m for m in wrapper if m in tokens),
        "starts": {fmt.call_begin: "block", "<function=": "fn_name"}
        if fmt.call_begin
        else {"<function=": "fn_name"},
        "end": fmt.call_end or None,
        "__module__": __name__,
        "__doc__": f"Derived parser of {fmt.template} (<function=…><parameter=…>).",
    }
    return type(f"Derived_{name}", (base,), attrs)


def _pythonic_class(fmt: DerivedFormat, name: str, tokens: frozenset[str]) -> type[FormatParser]:
    base = _machine("pythonic", "PythonicParser", "pythonic")
    if fmt.call_begin:
        starts: dict[str, str] = {fmt.call_begin: "py_block"}
        ends: dict[str, str | None] = {fmt.call_begin: fmt.call_end or None}
    else:
        starts, ends = {"[": "py_bare"}, {}
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


# ---------------------------------------------------------------------- probing
def _call_id(index: int) -> str:
    return f"prb{index}abcde"  # 9 alphanumerics (Mistral requires them)


def _call(index: int, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": _call_id(index),
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


_TURNS: dict[str, dict[str, Any]] = {
    "content": {"role": "assistant", "content": PROBE_CONTENT},
    "one": {"role": "assistant", "content": "", "tool_calls": [_call(0, PROBE_NAME, PROBE_ARGS)]},
    "two": {
        "role": "assistant",
        "content": "",
        "tool_calls": [_call(0, PROBE_NAME, PROBE_ARGS), _call(1, PROBE_NAME_2, PROBE_ARGS_2)],
    },
    "reasoning": {
        "role": "assistant",
        "content": PROBE_CONTENT,
        "reasoning_content": PROBE_REASONING,
    },
}


def _shared_head(prompt: str, full: str) -> int:
    """Where the turn starts in ``full``: after the generation prompt, else after the
    longest common prefix made of whole marker-like units (a prefilled ``<think>`` is
    not cut in half)."""
    if full.startswith(prompt):
        return len(prompt)
    n = min(len(prompt), len(full))
    i = 0
    while i < n and prompt[i] == full[i]:
        i += 1
    start = max(prompt.rfind("\n", 0, i) + 1, 0)
    return start + len(_atom_prefix(prompt[start:], full[start:]))


def _render_turns(tpl: Any, opts: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The text each probe turn adds after the generation prompt; and the render errors."""
    turns: dict[str, str] = {}
    errors: dict[str, str] = {}
    tools = PROBE_TOOLS if "tools" in tpl.jinja_source else None
    try:
        prompt = tpl.render(_USER, add_generation_prompt=True, tools=tools, **opts)
    except ChatFmtError as exc:
        return turns, {kind: f"the template cannot render a question: {exc}" for kind in _TURNS}
    for kind, turn in _TURNS.items():
        variants = [turn, {**turn, "content": None}] if "tool_calls" in turn else [turn]
        for variant in variants:  # calls with content "" or None (DeepSeek V3 needs None)
            try:
                full = tpl.render(
                    [*_USER, variant], add_generation_prompt=False, tools=tools, **opts
                )
            except ChatFmtError as exc:
                errors[kind] = str(exc)
                continue
            turns[kind] = full[_shared_head(prompt, full) :]
            if PROBE_NAME in turns[kind]:
                break
    return turns, errors


def _label(tpl: Any) -> str:
    origin = getattr(tpl, "origin", None)
    name = getattr(tpl, "name", "?")
    return f"{name!r} ({origin})" if origin and origin != "Jinja source" else repr(name)


def _atoms(text: str) -> list[str]:
    return _ATOM.findall(text)


def _atom_prefix(a: str, b: str) -> str:
    """The longest common prefix of ``a`` and ``b`` made of whole marker-like units."""
    out = []
    for x, y in zip(_atoms(a), _atoms(b)):
        if x != y:
            break
        out.append(x)
    return "".join(out)


def _atom_suffix(a: str, b: str) -> str:
    out = []
    for x, y in zip(reversed(_atoms(a)), reversed(_atoms(b))):
        if x != y:
            break
        out.append(x)
    return "".join(reversed(out))


def _json_values(text: str) -> list[tuple[int, int, Any]]:
    """The outermost JSON objects/lists in ``text`` as ``(start, end, value)``."""
    dec = json.JSONDecoder()
    found = []
    pos = 0
    while pos < len(text):
        c = text[pos]
        if c in "{[":
            try:
                value, end = dec.raw_decode(text, pos)
            except ValueError:
                pos += 1
                continue
            found.append((pos, end, value))
            pos = end
        else:
            pos += 1
    return found


def _is_args(value: Any, args: Mapping[str, Any]) -> bool:
    if value == args:
        return True
    if isinstance(value, str):
        try:
            return bool(json.loads(value) == args)
        except ValueError:
            return False
    return False


def _call_keys(value: Any, name: str, args: Mapping[str, Any]) -> tuple[str, str] | None:
    """(name key, arguments key) if ``value`` is a call object of ``name`` with ``args``."""
    if not isinstance(value, dict):
        return None
    name_key = next((k for k, v in value.items() if v == name), None)
    args_key = next((k for k, v in value.items() if _is_args(v, args)), None)
    if name_key is None or args_key is None:
        return None
    return name_key, args_key


class _Unclassified(Exception):
    """The tool-call form was found but not understood (the message says what was seen)."""


def _strip_turn(text: str, head: str, tail: str, stops: tuple[str, ...]) -> str:
    """A rendered turn without the head/tail a plain answer has (end-of-turn marker, …)."""
    if head and text.startswith(head):
        text = text[len(head) :]
    return _cut_tail(text, tail, stops)


def _cut_tail(text: str, tail: str, stops: tuple[str, ...]) -> str:
    """A rendered turn up to where the model stops (the plain answer's tail, a stop word)."""
    shared = _atom_suffix(text, tail)
    if shared.strip():
        text = text[: len(text) - len(shared)]
    last = text.rfind("probe-")  # the last argument value written
    hits = [i for w in stops if w and (i := text.find(w, max(last, 0))) >= 0]
    return text[: min(hits)] if hits else text


def _json_format(one: str, two: str | None, label: str) -> DerivedFormat | None:
    """Classify a turn written with JSON (``None`` if the arguments are not JSON)."""
    nested = PROBE_ARGS["opts"]
    values = [v for v in _json_values(one) if v[2] != nested]
    for start, end, value in values:
        keys = _call_keys(value, PROBE_NAME, PROBE_ARGS)
        listed = (
            isinstance(value, list)
            and len(value) == 1
            and (keys := _call_keys(value[0], PROBE_NAME, PROBE_ARGS)) is not None
        )
        if keys is None and not listed:
            continue
        assert keys is not None
        begin, end_marker = one[:start].strip(), one[end:].strip()
        encoding = "json_list" if listed else "json_call"
        if not begin:
            if listed:
                raise _Unclassified(f"a JSON list of calls with no marker before it: {one!r}")
            return DerivedFormat(label, "bare_json_call", name_key=keys[0], args_key=keys[1])
        sep = ""
        if two is not None and not listed:
            later = [v for v in _json_values(two) if _call_keys(v[2], PROBE_NAME_2, PROBE_ARGS_2)]
            first = [v for v in _json_values(two) if _call_keys(v[2], PROBE_NAME, PROBE_ARGS)]
            if later and first:
                between = two[first[0][1] : later[0][0]].strip()
                if between in (",", ";"):
                    sep = between
        return DerivedFormat(
            label, encoding, call_begin=begin, call_end=end_marker, separator=sep,
            name_key=keys[0], args_key=keys[1],
        )  # fmt: skip
    for start, end, value in values:
        if _is_args(value, PROBE_ARGS) and not isinstance(value, str):
            return _named_format(one, two, start, end, label)
    if values:
        shown = ", ".join(one[s:e][:80] for s, e, _ in values[:2])
        raise _Unclassified(f"JSON that is neither a call object nor the arguments: {shown}")
    return None


def _named_format(one: str, two: str | None, start: int, end: int, label: str) -> DerivedFormat:
    """``…NAME<sep>{args}…``: the name outside the JSON arguments."""
    at = one.rfind(PROBE_NAME, 0, start)
    if at < 0:
        raise _Unclassified(f"JSON arguments without the tool name before them: {one!r}")
    head, sep, tail = one[:at], one[at + len(PROBE_NAME) : start], one[end:]
    if not head.strip():
        raise _Unclassified(f"no marker before the tool name: {one!r}")
    name_open = ""
    if _call_id(0) in head:  # <call>ID<name_open>NAME…: the id is skipped
        head, name_open = head.split(_call_id(0), 1)
        if not name_open.strip():
            raise _Unclassified(f"no marker between the call id and the tool name: {one!r}")
    id_end = ""
    if _call_id(0) in sep:  # NAME<sep>ID<id_end>{args}: the id is skipped
        sep, id_end = sep.split(_call_id(0), 1)
    call_begin, call_end, calls_begin, calls_end, separator = head, tail, "", "", ""
    if two is not None:
        later = [v for v in _json_values(two) if _is_args(v[2], PROBE_ARGS_2)]
        at2 = two.rfind(PROBE_NAME_2, 0, later[0][0]) if later else -1
        if at2 > end and two[:end] == one[:end]:
            sep2 = two[at2 + len(PROBE_NAME_2) : later[0][0]].replace(_call_id(1), "", 1)
            sep = sep + id_end if id_end else sep
            indexed = _index_split(sep, sep2) if sep2 != sep and not id_end else None
            if indexed is not None:  # NAME<sep>INDEX<id_end>{args} (Kimi's functions.NAME:0)
                sep, id_end = indexed
            elif sep2 != sep:
                raise _Unclassified(
                    f"the text between name and arguments differs between calls ({sep!r}, {sep2!r})"
                )
            elif id_end:
                sep = sep[: len(sep) - len(id_end)]
            middle = two[end:at2]
            if name_open:
                middle = middle.removesuffix(_call_id(1) + name_open)
            call_end = _atom_prefix(tail, middle)
            rest = middle[len(call_end) :]
            call_begin = _atom_suffix(head, rest)
            if not call_begin.strip():
                raise _Unclassified(f"no marker before each call (between two calls: {middle!r})")
            calls_begin = head[: len(head) - len(call_begin)]
            calls_end = tail[len(call_end) :]
            separator = rest[: len(rest) - len(call_begin)]
    return DerivedFormat(
        label, "json_arguments",
        calls_begin=calls_begin.strip(), calls_end=calls_end.strip(),
        call_begin=call_begin.strip(), call_end=call_end.strip(),
        name_sep=sep.strip() if sep.strip() else sep, separator=separator.strip(),
        id_end=id_end.strip(), name_open=name_open.strip(),
    )  # fmt: skip


def _xml_format(one: str, label: str) -> DerivedFormat | None:
    """``…NAME…<k>text<sep>probe-alpha<close><k>count<sep>42…`` — XML-style parameters."""
    at = one.find(PROBE_NAME)
    v1 = one.find(str(PROBE_ARGS["text"]), at)
    v2 = one.find(str(PROBE_ARGS["count"]), v1)
    if min(at, v1, v2) < 0:
        return None
    k1, k2 = one.rfind("text", at, v1), one.rfind("count", v1, v2)
    if k1 < 0 or k2 < 0:
        return None
    after_name = one[at + len(PROBE_NAME) : k1]
    between = one[v1 + len(str(PROBE_ARGS["text"])) : k2]
    key_open = _atom_suffix(after_name, between)
    value_close = between[: len(between) - len(key_open)].strip()
    key_open = key_open.strip()
    name_sep = after_name.rstrip()
    name_sep = (
        name_sep[: len(name_sep) - len(key_open)].strip()
        if name_sep.endswith(key_open)
        else name_sep
    )
    sep = [a for a in _atoms(one[k1 + len("text") : v1]) if not a.isspace()]
    call_begin = one[:at].strip()
    last = one.rfind(value_close) if value_close else -1
    call_end = one[last + len(value_close) :].strip() if last >= 0 else ""
    if not key_open or not value_close or not call_begin:
        return None
    key_close = sep[0] if len(sep) == 2 else "".join(sep)
    value_open = sep[1] if len(sep) == 2 else ""
    pairs = DerivedFormat(
        label, None,
        key_open=key_open, key_close=key_close, value_open=value_open, value_close=value_close,
    )  # fmt: skip
    if (
        call_begin.endswith("<function=")
        and name_sep == ">"
        and (key_open, key_close, value_close) == ("<parameter=", ">", "</parameter>")
        and call_end.startswith("</function>")
    ):
        return replace(
            pairs, encoding="xml_function",
            call_begin=call_begin.removesuffix("<function=").strip(),
            call_end=call_end.removeprefix("</function>").strip(),
        )  # fmt: skip
    if not name_sep and value_open and _TAG.fullmatch(key_close) and call_end:
        return replace(pairs, encoding="xml_pairs", call_begin=call_begin, call_end=call_end)
    raise _Unclassified(
        f"XML-style parameters written {key_open + 'KEY' + key_close + value_open + 'VALUE' + value_close!r}"
        f" after {call_begin + 'NAME' + name_sep!r}, a spelling no parser machine reads"
    )


def _pythonic_format(one: str, label: str) -> DerivedFormat | None:
    """``[NAME(text='probe-alpha', count=42, …)]`` — Python call syntax."""
    m = re.search(re.escape(PROBE_NAME) + r"\(\s*text\s*=", one)
    if m is None:
        return None
    begin = one[: m.start()].strip().removesuffix("[").rstrip()
    end = one[one.rfind(")") + 1 :].strip().removeprefix("]").lstrip()
    return DerivedFormat(label, "pythonic", call_begin=begin, call_end=end)


_EMPTY_BLOCK = re.compile(r"\s*(<[^<>\s/]{1,80}>)\s*(</[^<>\s]{1,80}>)\s*")
_INDEXED = re.compile(r"(\D*?)(\d+)(\D.*)", re.S)


def _index_split(sep: str, sep2: str) -> tuple[str, str] | None:
    """``(before, after)`` when two calls' separators differ only by a call index
    (``:0<|arg|>`` / ``:1<|arg|>``); the index is then skipped like a call id."""
    m, m2 = _INDEXED.fullmatch(sep), _INDEXED.fullmatch(sep2)
    if m is None or m2 is None or (m.group(1), m.group(3)) != (m2.group(1), m2.group(3)):
        return None
    if not m.group(1).strip() or not m.group(3).strip():
        return None
    return m.group(1), m.group(3)


def _reasoning(turns: Mapping[str, str], prompt_tail: str) -> tuple[tuple[str, str] | None, str]:
    """The reasoning block's markers, and a note when a form was seen but not derived."""
    text = turns.get("reasoning")
    if text is None or PROBE_REASONING not in text or PROBE_CONTENT not in text:
        if prompt_tail.endswith("<think>"):
            return ("<think>", "</think>"), ""
        # an empty block written before every answer (``<think></think>``): its tags
        content = turns.get("content", "")
        empty = _EMPTY_BLOCK.fullmatch(content[: max(content.find(PROBE_CONTENT), 0)])
        if empty is not None and _opener_of(empty.group(2)) == empty.group(1):
            return (empty.group(1), empty.group(2)), ""
        return None, ""
    at = text.index(PROBE_REASONING)
    before = text[:at].rstrip()
    after = text[at + len(PROBE_REASONING) : text.index(PROBE_CONTENT)].strip()
    close = after
    opener = _atoms(before)[-1] if before else ""
    if not opener or not _TAG.fullmatch(opener):
        opener = _opener_of(close)  # opened by the generation prompt
    if not (_TAG.fullmatch(close) and opener):
        return None, f"reasoning is rendered as {before[-40:] + PROBE_REASONING + after!r}"
    return (opener, close), ""


def _opener_of(close: str) -> str:
    if close.startswith("</"):
        return "<" + close[2:]
    if close.startswith("[/"):
        return "[" + close[2:]
    return ""


def _classify(
    tpl: Any,
    opts: Mapping[str, Any],
    label: str,
    turns: Mapping[str, str],
    errors: Mapping[str, str],
) -> DerivedFormat:
    notes: list[str] = []
    try:
        prompt = tpl.render(_USER, add_generation_prompt=True, **opts)
    except ChatFmtError:
        prompt = ""
    reasoning, note = _reasoning(turns, prompt.rstrip())
    if note:
        notes.append(note)
    content = turns.get("content", "")
    at = content.find(PROBE_CONTENT)
    head, tail = (content[:at], content[at + len(PROBE_CONTENT) :]) if at >= 0 else ("", "")
    stops = tuple(tpl.generation_config.stop_words)
    one = turns.get("one")
    if one is None or PROBE_NAME not in one:
        why = errors.get("one") or "the template does not write the call"
        notes.append(f"no tool calls rendered ({why})")
        return DerivedFormat(label, None, reasoning=reasoning, notes=tuple(notes))
    one = _strip_turn(one, head, tail, stops)
    two = turns.get("two")
    if two is not None and PROBE_NAME_2 in two:
        two = _strip_turn(two, head, tail, stops)
    else:
        notes.append("only one call per turn is rendered")
        two = None
    try:
        fmt = _json_format(one, two, label)
    except _Unclassified as exc:
        raise ParseError(f"cannot derive a tool-call parser from template {label}: {exc}") from None
    if fmt is None:
        try:
            fmt = _xml_format(one, label) or _pythonic_format(one, label)
        except _Unclassified as exc:
            raise ParseError(
                f"cannot derive a tool-call parser from template {label}: {exc}"
            ) from None
    if fmt is None:
        raise ParseError(
            f"cannot derive a tool-call parser from template {label}: the calls are rendered as "
            f"{one.strip()[:300]!r}, which is not a form chatfmt can derive (JSON call objects, "
            "JSON lists, name + JSON arguments)"
        )
    return replace(fmt, reasoning=reasoning, notes=(*fmt.notes, *notes))


# ---------------------------------------------------------------------- checks and caching
def _self_check(
    tpl: Any, opts: Mapping[str, Any], found: _Derived, turns: Mapping[str, str]
) -> None:
    """The derived parser, with the template's end-of-turn markers and prefill detection (a
    real :func:`~.base.parse`), must read the template's own rendered calls back."""
    fmt = found.fmt
    prefilled = _prefill(tpl, opts, fmt)
    expected = [(PROBE_NAME, PROBE_ARGS), (PROBE_NAME_2, PROBE_ARGS_2)]
    for kind, count in (("one", 1), ("two", 2)):
        text = turns.get(kind)
        if text is None or (kind == "two" and PROBE_NAME_2 not in text):
            continue
        if prefilled and fmt.reasoning and fmt.reasoning[1] not in text:
            text = fmt.reasoning[1] + "\n" + text  # the model closes the prefilled block first
        msg = parse(text, tpl, tools=PROBE_TOOLS, **opts)
        got = [
            (c["function"]["name"], _loads(c["function"]["arguments"]))
            for c in msg.get("tool_calls") or ()
            if "error" not in c
        ]
        if got != expected[:count] or (msg.get("content") or "").strip():
            raise ParseError(
                f"cannot derive a tool-call parser from template {fmt.template}: a {fmt.encoding} "
                f"parser with the markers found does not read the template's own calls back "
                f"(rendered {text.strip()[:200]!r}, parsed {dict(msg)})"
            )


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class _Derived:
    fmt: DerivedFormat
    tool: str | None  # registered tool parser name (None: plain)
    reasoning: str | None  # registered reasoning parser name


_CACHE: dict[Any, _Derived | ParseError] = {}
_CACHE_MAX = 256


def _jinja_of(template: Any) -> Any:
    """The Jinja template to probe: the template itself or a recognized source's Jinja backend."""
    jinja = getattr(template, "jinja", None)
    if jinja is not None and hasattr(jinja, "jinja_source"):
        return jinja
    return template if hasattr(template, "jinja_source") else None


def _derive(template: Any, opts: Mapping[str, Any]) -> _Derived:
    tpl = _jinja_of(template)
    if tpl is None:
        raise ParseError(
            f"template {getattr(template, 'name', template)!r} has no Jinja source to derive a parser from"
        )
    try:
        key: Any = (tpl.sha256, _freeze(dict(tpl.variables)), _freeze(dict(opts)))
    except TypeError:  # an option value that cannot be a key: derived each time
        key = (tpl.sha256, id(opts))
    found = _CACHE.get(key)
    if found is None:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        try:
            found, turns = _build(tpl, opts, hashlib.sha256(repr(key).encode()).hexdigest()[:12])
            _CACHE[key] = found  # the check below parses with the template: found in the cache
            if found.tool is not None:
                _self_check(tpl, opts, found, turns)
        except ParseError as exc:
            for obj in (template, tpl):  # names the failed check may have cached
                with contextlib.suppress(TypeError):
                    _DEFAULT_NAMES.pop(obj, None)
            if isinstance(found, _Derived):
                for name in (found.tool, found.reasoning):
                    if name and name.startswith("derived:"):
                        TOOL_PARSERS.pop(name, None)
                        REASONING_PARSERS.pop(name, None)
            found = exc
        _CACHE[key] = found
    if isinstance(found, ParseError):
        raise ParseError(f"{found} (name a parser to parse anyway: parser='plain', 'hermes', …)")
    return found


def _build(tpl: Any, opts: Mapping[str, Any], digest: str) -> tuple[_Derived, Mapping[str, str]]:
    label = _label(tpl)
    turns, errors = _render_turns(tpl, opts)
    fmt = _classify(tpl, opts, label, turns, errors)
    name = f"derived:{digest}"
    reasoning_cls: type[ThinkParser] | None = None
    reasoning: str | None = None
    if fmt.reasoning is not None:
        opener, closer = fmt.reasoning
        if (opener, closer) == (ThinkParser.open_marker, ThinkParser.close_marker):
            reasoning, reasoning_cls = ThinkParser.name, ThinkParser
        else:
            reasoning_cls = think_parser(name, opener, closer)
    tool: str | None = None
    if fmt.encoding is not None:
        try:
            cls = FACTORIES[fmt.encoding](fmt, name, frozenset(tpl.control_tokens))
        except _NoMachine:
            raise ParseError(
                f"cannot derive a tool-call parser from template {fmt.template}: its calls are "
                f"{fmt.encoding} ({ENCODINGS[fmt.encoding]}), and no parser machine for them is "
                "available in this build"
            ) from None
        TOOL_PARSERS[name] = cls
        tool = name
    if reasoning_cls is not None and reasoning is None:
        REASONING_PARSERS[name] = reasoning_cls
        reasoning = name
    return _Derived(fmt, tool, reasoning), turns


def _prefill(tpl: Any, opts: Mapping[str, Any], fmt: DerivedFormat) -> bool:
    if fmt.reasoning is None:
        return False
    try:
        prompt = tpl.render(_USER, add_generation_prompt=True, **opts)
    except ChatFmtError:
        return False
    return bool(prompt.rstrip().endswith(fmt.reasoning[0]))


def derive_parser(template: Any, **options: Any) -> DerivedFormat:
    """What the parser derived from ``template`` (a Jinja template, name or path) reads.

    Raises :class:`ParseError` naming the template when its tool calls cannot be
    classified. Cached per source, variables and ``options`` (template options).
    """
    from ..api import get_template

    tpl = template if hasattr(template, "render") else get_template(template)
    return _derive(tpl, options).fmt


def derived_parsers(template: Any, options: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(tool parser name, reasoning parser name) derived for ``template``; ``None`` when the
    template has no Jinja source. Used by :func:`~.base._resolve` for templates without a parser."""
    if not options:  # the common case: one lookup per template object
        try:
            return _DEFAULT_NAMES[template]
        except (KeyError, TypeError):
            pass
    if _jinja_of(template) is None:
        return None
    found = _derive(template, options)
    names = found.tool or "plain", found.reasoning
    if not options:
        with contextlib.suppress(TypeError):  # a template that cannot be weakly referenced
            _DEFAULT_NAMES[template] = names
    return names


#: Derived parser names per template object without options (dropped with the template).
_DEFAULT_NAMES: weakref.WeakKeyDictionary[Any, tuple[str, str | None]] = weakref.WeakKeyDictionary()
