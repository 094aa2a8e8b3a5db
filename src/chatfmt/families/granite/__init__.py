"""granite: templates, parsers and control tokens (see :mod:`chatfmt.families`)."""

from __future__ import annotations

from .. import ReasoningParsers, ToolParsers
from .parser import GraniteParser, GraniteThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    GraniteParser: ("granite3", "granite4"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    GraniteThinkParser: (),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "GraniteParser",
    "GraniteThinkParser",
]
