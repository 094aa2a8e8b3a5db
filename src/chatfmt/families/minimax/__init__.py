"""The minimax family — MiniMax-M1, M2 and M3: the official Jinja templates with their model facts and parsers.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import MINIMAX_M1_FORMAT, MINIMAX_M2_FORMAT, MINIMAX_M3_FORMAT
from .parser import MiniMaxM1Parser, MiniMaxM2Parser, MiniMaxM3Parser, MiniMaxM3ThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    MiniMaxM1Parser: ("minimax", "minimax-m1"),
    MiniMaxM2Parser: ("minimax-m2",),
    MiniMaxM3Parser: ("minimax-m3",),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    MiniMaxM3ThinkParser: ("mm_think",),
}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    MiniMaxM2Parser: (MINIMAX_M2_FORMAT,),
    MiniMaxM3Parser: (MINIMAX_M3_FORMAT,),
    MiniMaxM1Parser: (MINIMAX_M1_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "MiniMaxM1Parser",
    "MiniMaxM2Parser",
    "MiniMaxM3Parser",
    "MiniMaxM3ThinkParser",
]
