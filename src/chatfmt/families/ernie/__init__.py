"""The ernie family — Baidu ERNIE 4.5: ``<tool_call>`` JSON calls, ``</think>``-closed reasoning.

Its parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
No template: ERNIE 4.5's chat templates are not among the reference templates (parse with
``parser="ernie45"``, ``reasoning_parser="ernie45"``, or pair a template with
:func:`chatfmt.with_tool_parser`).
"""

from __future__ import annotations

from ...template import Template
from .. import ReasoningParsers, ToolParsers
from .parser import Ernie45Parser, Ernie45ThinkParser

TEMPLATES: tuple[Template, ...] = ()

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    Ernie45Parser: ("ernie45_moe", "ernie-x1"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    Ernie45ThinkParser: (),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "Ernie45Parser",
    "Ernie45ThinkParser",
]
