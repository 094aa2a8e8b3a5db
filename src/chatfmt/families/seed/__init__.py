"""The seed family — ByteDance Seed-OSS: ``<seed:bos>role\n…<seed:eos>`` turns, ``<seed:think>`` reasoning and ``<seed:tool_call><function=…><parameter=…>`` XML tool calls.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import SEED_OSS_FORMAT
from .parser import SeedOssParser, SeedThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    SeedOssParser: (),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    SeedThinkParser: (),
}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    SeedOssParser: (SEED_OSS_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "SeedOssParser",
    "SeedThinkParser",
]
