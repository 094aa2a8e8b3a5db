"""The hunyuan family — Tencent Hy3 (Hunyuan 3) preview: the official Jinja template with the ``hunyuan`` parsers.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import HY3_FORMAT
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

#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    HunyuanParser: (HY3_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "HunyuanParser",
    "HunyuanThinkParser",
]
