"""The hunyuan family — Tencent Hy3 (Hunyuan 3) preview: the official Jinja template with the ``hunyuan`` parsers.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

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
