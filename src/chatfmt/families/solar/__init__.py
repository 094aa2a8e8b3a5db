"""The solar family — Upstage Solar Open 100B: the official Jinja template with the ``solar_open`` parsers.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import SOLAR_OPEN_FORMAT
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
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    SolarOpenParser: (SOLAR_OPEN_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "SolarOpenParser",
    "SolarOpenThinkParser",
]
