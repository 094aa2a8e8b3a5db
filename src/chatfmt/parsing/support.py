"""Which parsers a template gets, and where they come from (``chatfmt templates``, docs/parsing.md).

:func:`parser_support` describes one template: what kind of template it is
(``native``, ``recognized-native`` — a Jinja source recognized as a native template —,
``packaged`` — an official Jinja file shipped with its model facts — or ``jinja``), its
tool parser and that parser's origin, its reasoning parser and its end-of-turn markers.

Origins: ``native`` (the family parser of a native or recognized-native template),
``packaged`` (the parser named by a packaged template), ``derived`` (a parser that
:mod:`chatfmt.parsing.derived` builds from the template's own renders, for templates
without a named tool parser) and ``none`` (no tool-call syntax known: all text is content).
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..errors import ParseError
from ..jinja.packaged import PackagedTemplate
from ..jinja.recognized import RecognizedTemplate
from ..jinja.template import JinjaTemplate
from ..template import Template
from .base import end_of_turn_markers

TemplateKind = Literal["native", "recognized-native", "packaged", "jinja"]
ParserOrigin = Literal["native", "packaged", "derived", "none"]

#: The module that derives parsers from a template's renders (optional). Its function
#: ``derived_parsers(template, options)`` returns ``(tool parser name, reasoning parser name)``
#: (``"plain"``: no tool calls rendered), ``None`` for a template without a Jinja source, or
#: raises ``ParseError`` when the template's tool-call form cannot be classified.
DERIVED_MODULE = "chatfmt.parsing.derived"


@dataclass(frozen=True)
class ParserSupport:
    """A template's parsers (see the module doc)."""

    template: str
    kind: TemplateKind
    tool_parser: str | None
    tool_parser_origin: ParserOrigin
    reasoning_parser: str | None
    end_of_turn: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly fields (``end_of_turn`` as a list)."""
        d = asdict(self)
        d["end_of_turn"] = list(self.end_of_turn)
        return d


def template_kind(tpl: Template) -> TemplateKind:
    """``packaged``, ``recognized-native``, ``jinja`` or ``native``."""
    if isinstance(tpl, PackagedTemplate):
        return "packaged"
    if isinstance(tpl, RecognizedTemplate):
        return "recognized-native"
    if isinstance(tpl, JinjaTemplate):
        return "jinja"
    return "native"


def derived_parsers_of(tpl: Template) -> tuple[str, str | None] | None:
    """The (tool, reasoning) parser names :mod:`chatfmt.parsing.derived` derives for ``tpl``.

    ``None`` when that module (or its ``derived_parsers``) is absent, when it derives
    nothing (no Jinja source) or no tool-call syntax (``"plain"``), and when it cannot
    classify the template's tool-call form (``ParseError``).
    """
    try:
        module = importlib.import_module(DERIVED_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != DERIVED_MODULE:
            raise  # the module exists but one of its own imports is missing: a real bug
        return None
    derive = getattr(module, "derived_parsers", None)
    if derive is None:
        return None
    try:
        found = derive(tpl, {})
    except ParseError:
        return None
    if not found or found[0] in (None, "plain"):
        return None
    return str(found[0]), found[1]


def parser_support(tpl: Template) -> ParserSupport:
    """What :func:`chatfmt.parse` uses for ``tpl`` (see the module doc)."""
    kind = template_kind(tpl)
    tool: str | None = tpl.tool_parser
    reasoning = tpl.reasoning_parser
    origin: ParserOrigin = "packaged" if kind == "packaged" else "native"
    if not tool:
        derived = derived_parsers_of(tpl)
        origin = "derived" if derived else "none"
        if derived:
            tool, reasoning = derived[0], reasoning or derived[1]
    return ParserSupport(
        template=tpl.name,
        kind=kind,
        tool_parser=tool,
        tool_parser_origin=origin,
        reasoning_parser=reasoning,
        # the parser named explicitly: no second derivation (which may raise for "none")
        end_of_turn=end_of_turn_markers(tpl, parser=tool or "plain"),
    )
