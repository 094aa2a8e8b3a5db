"""The gpt_oss family — OpenAI gpt-oss: the Harmony format (``openai-gpt-oss-120b.jinja``, also gpt-oss-20b).

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import HARMONY_FORMAT
from .parser import HarmonyParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    HarmonyParser: ("gpt_oss", "openai"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}

#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    HarmonyParser: (HARMONY_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "HarmonyParser",
]
