"""solar: templates, parsers and control tokens (see :mod:`chatfmt.families`)."""

from __future__ import annotations

from .. import ReasoningParsers, ToolParsers
from .parser import SolarOpenParser, SolarOpenThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    SolarOpenParser: ("solar",),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    SolarOpenThinkParser: ("solar",),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "ReasoningParsers",
    "SolarOpenParser",
    "SolarOpenThinkParser",
    "ToolParsers",
]
