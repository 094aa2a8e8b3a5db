"""The gigachat family — Sber GigaChat 3 and 3.1 (10B-A1.8B "Lightning"): official Jinja templates, ``gigachat3`` parsers.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import GIGACHAT3_FORMAT, GIGACHAT31_FORMAT
from .parser import GigaChat3Parser, GigaChat31Parser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    GigaChat3Parser: ("gigachat",),
    GigaChat31Parser: ("gigachat31",),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    GigaChat3Parser: (GIGACHAT3_FORMAT,),
    GigaChat31Parser: (GIGACHAT31_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "GigaChat3Parser",
    "GigaChat31Parser",
]
