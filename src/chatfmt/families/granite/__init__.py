"""The granite family — IBM Granite chat formats: Granite 3.x (``<|tool_call|>``) and Granite 4.x (``<tool_call>`` JSON).

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import GRANITE3_FORMAT, GRANITE4_FORMAT
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

#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    GraniteParser: (GRANITE3_FORMAT, GRANITE4_FORMAT),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "GraniteParser",
    "GraniteThinkParser",
]
