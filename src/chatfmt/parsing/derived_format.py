"""How a format writes tool calls, as data (:class:`ToolCallFormat`), and the encodings.

The same description serves three readers: a family declares its format(s) in its
``markers`` module (checked against the family's templates by the test suite), the
derived-parser probe (:mod:`.derived_probe`) finds one in a Jinja template it does not
know, and the parser machines (:mod:`.derived_machines`) are built from one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

#: How a derived format writes a call, with what each means.
ENCODINGS: Mapping[str, str] = {
    "json_arguments": "name outside, then a JSON object of arguments: <call>NAME<sep>{args}<end>",
    "json_call": 'JSON call objects {"name": …, "arguments": …} between markers (Hermes-like)',
    "json_list": "a JSON list of call objects after a marker ([TOOL_CALLS][…]-like)",
    "bare_json_call": "call objects written without any marker (Llama 3 JSON-like)",
    "xml_pairs": "name, then <key>k</key><value>v</value> pairs (GLM-4.5-like), values typed by the schema",
    "xml_function": "<function=name><parameter=k>v</parameter>… (Qwen3-Coder-like), values typed by the schema",
    "pythonic": "Python call syntax [f(a=1, b='x')] read as literals (never evaluated)",
    "json_keyed": 'a JSON list of {"NAME": {args}} objects after a marker (Apertus-like)',
    "bare_keys": "NAME{key:value,…} with bare keys and delimited strings (Gemma 4-like)",
}


#: What a marker may hold besides text: the parameter's name, a word for the value's type, the
#: function's name.
_PLACEHOLDER = re.compile(r"\{key\}|\{type\}|\{name\}")


@dataclass(frozen=True)
class ToolCallFormat:
    """How tool calls are written: the markers around the calls block and each call, how a
    call's name and arguments are encoded, and the reasoning block's markers.

    One call reads ``calls_begin? call_begin [name_open] NAME [name_sep] [ID id_end] ARGS
    call_end`` (``separator`` between calls, ``calls_end`` after the last); what ``NAME``
    and ``ARGS`` look like is :attr:`encoding`. Declared by a family (see
    ``chatfmt/families/*/markers.py``) or found by :func:`~.derived.derive_parser`.
    """

    #: Where the description comes from (a template's name, or a family's).
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
    #: JSON call objects: a call-id key written before the name key (``"tool_call_id"``).
    id_key: str = ""
    #: Other spellings of :attr:`name_sep` the model writes and the parser reads (Harmony's
    #: ``<|constrain|>json`` header forms).
    name_seps: tuple[str, ...] = ()
    #: One call per assistant message: the call's end also ends the turn (Harmony).
    one_call: bool = False
    #: Markers may hold ``{key}`` (the parameter's name), ``{type}`` (a word for the value's
    #: JSON type: JSON type → word, ``"*"`` for any other type, e.g. DSML's
    #: ``string="true"`` / ``string="false"``) and, in :attr:`calls_begin`, ``{name}`` (the
    #: function's name, written again in a message header: Glimmer).
    type_words: tuple[tuple[str, str], ...] = ()
    #: Markers around the reply's text where the template wraps it and writes the wrapper,
    #: empty, before the calls too (Kimi K3's ``response`` tag).
    response: tuple[str, str] | None = None
    #: Markers around the reasoning block, if the template renders one.
    reasoning: tuple[str, str] | None = None
    #: Observations worth telling (why there are no calls, a reasoning form not derived, …).
    notes: tuple[str, ...] = field(default=())

    def markers(self) -> tuple[str, ...]:
        """The markers one call is written with, in the order they appear."""
        order = (
            self.calls_begin,
            self.call_begin,
            self.name_open,
            self.name_sep,
            self.id_end,
            self.key_open,
            self.key_close,
            self.value_open,
            self.value_close,
            self.call_end,
            self.calls_end,
        )
        # a marker with a placeholder is matched by its fixed start
        fixed = (_PLACEHOLDER.split(m, 1)[0] for m in order)
        return tuple(m for m in fixed if m)

    def same_calls(self, other: ToolCallFormat) -> bool:
        """Whether ``other`` writes calls the same way (its origin, reasoning and notes aside)."""
        return replace(self, template="", reasoning=None, notes=()) == replace(
            other, template="", reasoning=None, notes=()
        )

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


#: The earlier name of :class:`ToolCallFormat` (what :func:`~.derived.derive_parser` returns).
DerivedFormat = ToolCallFormat
