"""A template's tool-call format (:class:`~chatfmt.parsing.ToolCallFormat`) and reasoning block.

A template paired with a named tool format (:func:`chatfmt.with_tool_format`) takes that
format's description; a template with a family parser takes the form its family declares for that parser
(``TOOL_CALL_FORMATS`` in ``chatfmt/families/<family>/__init__.py``; where a parser has
several forms, the one whose markers the template's own rendered call shows, in order); a
Jinja template chatfmt does not know takes the format :func:`~chatfmt.parsing.derive_parser`
finds in it, and a packaged template whose parser declares none takes the format derived from
its official Jinja. ``None`` when there is no description (every built-in template with a
tool parser has one; a Jinja template the probe cannot read may not).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from ..errors import ChatFmtError
from ..parsing.derived_format import ToolCallFormat
from .memo import per_template

#: Per template object: options key → format (or None).
_FORMATS: weakref.WeakKeyDictionary[Any, dict[str, ToolCallFormat | None]] = (
    weakref.WeakKeyDictionary()
)


def tool_call_format(
    template: Any, options: Mapping[str, Any] | None = None
) -> ToolCallFormat | None:
    """How ``template`` writes tool calls, or ``None`` when no format describes them."""
    import json

    opts = dict(options or {})
    key = json.dumps(opts, sort_keys=True, default=repr)
    found: ToolCallFormat | None = per_template(
        _FORMATS, template, key, lambda: _find(template, opts)
    )
    return found


def _find(template: Any, options: Mapping[str, Any]) -> ToolCallFormat | None:
    paired = getattr(template, "tool_call_format", None)  # a template paired with a tool format
    if isinstance(paired, ToolCallFormat):
        return paired
    forms = _declared(getattr(template, "tool_parser_class", None))
    if len(forms) == 1:
        return forms[0]
    if forms:  # the most specific form the template's own call shows
        turn = _call_turn(template, options)
        fits = [f for f in forms if turn is not None and _in_order(turn, f.markers())]
        return max(fits, key=lambda f: len(f.markers())) if fits else forms[0]
    return _derived(template, options)


def _declared(parser: Any) -> tuple[ToolCallFormat, ...]:
    if parser is None:
        return ()
    from .. import families

    for module in families.families():
        forms = getattr(module, "TOOL_CALL_FORMATS", {}).get(parser)
        if forms:
            return tuple(forms)
    return ()


def _derived(template: Any, options: Mapping[str, Any]) -> ToolCallFormat | None:
    from ..errors import ParseError
    from ..parsing import derive_parser

    for jinja in _jinja_sources(template):
        try:
            fmt = derive_parser(jinja, **options)
        except (ParseError, ChatFmtError, TypeError):
            continue
        if fmt.encoding is not None:
            return fmt
    return None


def _jinja_sources(template: Any) -> list[Any]:
    """The Jinja templates describing ``template``: its own source, else the official ones it
    reproduces."""
    if hasattr(template, "jinja_source") or hasattr(
        getattr(template, "jinja", None), "jinja_source"
    ):
        return [template]
    found: list[Any] = []
    try:
        from ..jinja.recognize import official_source
        from ..jinja.template import JinjaTemplate
    except ImportError:  # pragma: no cover
        return found
    for file in getattr(template, "official_templates", ()):
        source = official_source(file)
        if source is not None:
            found.append(JinjaTemplate(source, name=template.name))
    return found


def _call_turn(template: Any, options: Mapping[str, Any]) -> str | None:
    from ..gateway.tool_choice import _PROBE_CALL, _PROBE_TOOL
    from ..parsing.derived_probe import _TURNS, _USER, PROBE_TOOLS, _shared_head

    # the derived-parser probe's call, else one whose every parameter has a description
    # (Command R's template refuses parameters without one)
    call_turn = {"role": "assistant", "content": "", "tool_calls": [_PROBE_CALL]}
    for tools, turn in ((PROBE_TOOLS, _TURNS["one"]), ([_PROBE_TOOL], call_turn)):
        try:
            prompt = template.render(_USER, add_generation_prompt=True, tools=tools, **options)
            full = template.render(
                [*_USER, turn], add_generation_prompt=False, tools=tools, **options
            )
        except ChatFmtError:
            continue
        text: str = full[_shared_head(prompt, full) :]
        return text
    return None


#: Per template object: options key → whether its calls' JSON is indented.
_INDENTED: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()


def writes_indented_json(template: Any, options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``template`` writes a call's JSON pretty-printed (a line break and an indent
    inside it, as Command R's ``json.dumps(indent=4)``)."""
    import json
    import re

    opts = dict(options or {})
    key = json.dumps(opts, sort_keys=True, default=repr)

    def find() -> bool:
        turn = _call_turn(template, opts)
        return turn is not None and re.search(r'[\[{,]\n[ \t]+["{[]', turn) is not None

    found: bool = per_template(_INDENTED, template, key, find)
    return found


def _in_order(text: str, markers: tuple[str, ...]) -> bool:
    pos = 0
    for marker in markers:
        pos = text.find(marker, pos)
        if pos < 0:
            return False
        pos += len(marker)
    return True


def reasoning_state(
    template: Any, options: Mapping[str, Any], fmt: ToolCallFormat | None
) -> tuple[str, str, bool] | None:
    """``(opener, closer, already_open)`` of the reasoning block a reply may start with, or
    ``None``: the template has no reasoning block, or its generation prompt already closed
    one (thinking off). ``already_open``: the generation prompt ends inside the block."""
    markers = fmt.reasoning if fmt is not None and fmt.reasoning else None
    if markers is None:
        parser = getattr(template, "reasoning_parser_class", None)
        opener = getattr(parser, "open_marker", None)
        closer = getattr(parser, "close_marker", None)
        if isinstance(opener, str) and isinstance(closer, str) and opener and closer:
            markers = (opener, closer)
    if markers is None:
        return None
    from ..parsing.derived_probe import _USER

    try:
        prompt = template.render(_USER, add_generation_prompt=True, **options).rstrip()
    except ChatFmtError:
        return None
    opener, closer = markers
    if prompt.endswith(opener):
        return opener, closer, True
    if prompt.endswith(closer):
        return None
    return opener, closer, False
