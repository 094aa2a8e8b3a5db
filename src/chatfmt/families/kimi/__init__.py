"""kimi: templates, parsers and control tokens (see :mod:`chatfmt.families`)."""

from __future__ import annotations

from .. import ReasoningParsers, ToolParsers
from .k3_parser import KimiK3Parser, KimiK3Think
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

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "KimiK2Parser",
    "KimiK2ThinkParser",
    "KimiK3Parser",
    "KimiK3Think",
    "ReasoningParsers",
    "ToolParsers",
]
