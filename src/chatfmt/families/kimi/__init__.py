"""The kimi family — Moonshot AI Kimi-K2 and Kimi-K3, with their parsers.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .k3_parser import KimiK3Parser, KimiK3Think
from .markers import KIMI_K2_FORMAT, KIMI_K3_FORMAT
from .parser import KimiK2Parser, KimiK2ThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    KimiK3Parser: (),
    KimiK2Parser: ("kimi", "kimi_k2_thinking"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    KimiK3Think: (),
    KimiK2ThinkParser: ("kimi_k2_thinking",),
}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    KimiK3Parser: (KIMI_K3_FORMAT,),
    KimiK2Parser: (KIMI_K2_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "KimiK2Parser",
    "KimiK2ThinkParser",
    "KimiK3Parser",
    "KimiK3Think",
]
