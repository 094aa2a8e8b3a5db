"""hunyuan: templates, parsers and control tokens (see :mod:`chatfmt.families`)."""

from __future__ import annotations

from .. import ReasoningParsers, ToolParsers
from .parser import HunyuanParser, HunyuanThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    HunyuanParser: ("hy3",),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    HunyuanThinkParser: ("hy3",),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "HunyuanParser",
    "HunyuanThinkParser",
]
