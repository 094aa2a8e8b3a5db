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
import json
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ChatFmtError, ParseError
from .base import REASONING_PARSERS, TOOL_PARSERS, _freeze, parse
from .derived_format import ENCODINGS, DerivedFormat
from .derived_machines import FACTORIES, NamedArgsParser, _NoMachine
from .derived_probe import (
    _USER,
    PROBE_ARGS,
    PROBE_ARGS_2,
    PROBE_NAME,
    PROBE_NAME_2,
    PROBE_TOOLS,
    _classify,
    _label,
    _render_turns,
)
from .reasoning import ThinkParser, think_parser

__all__ = [
    "ENCODINGS",
    "FACTORIES",
    "DerivedFormat",
    "NamedArgsParser",
    "derive_parser",
    "derived_parsers",
]


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
    # What the derivation reads from the template object is part of the key: besides source,
    # variables and options, a template's own stop words (where a turn is cut), control
    # tokens (given to the machines) and name (what its format and errors are labelled with).
    own = (tuple(tpl.generation_config.stop_words), tuple(tpl.control_tokens), tpl.name)
    try:
        key: Any = (tpl.sha256, _freeze(dict(tpl.variables)), _freeze(dict(opts)), own)
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
    classified. Cached per source, variables, ``options`` (template options) and what the
    template object adds: its stop words, control tokens and name.
    """
    from ..api import get_template

    tpl = template if hasattr(template, "render") else get_template(template)
    return _derive(tpl, options).fmt


def derived_parsers(template: Any, options: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(tool parser name, reasoning parser name) derived for ``template``; ``None`` when the
    template has no Jinja source. Used by :func:`~.base._choose_parsers` for templates without a parser."""
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
