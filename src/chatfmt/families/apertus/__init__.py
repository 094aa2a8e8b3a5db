"""The apertus family — Swiss AI Apertus: the official Jinja template with the ``apertus`` parsers.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import APERTUS_FORMAT
from .parser import ApertusParser, ApertusThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    ApertusParser: (),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    ApertusThinkParser: (),
}

#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    ApertusParser: (APERTUS_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "ApertusParser",
    "ApertusThinkParser",
]
