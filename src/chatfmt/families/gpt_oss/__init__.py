"""The gpt_oss family — OpenAI gpt-oss: the Harmony format (``openai-gpt-oss-120b.jinja``, also gpt-oss-20b).

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolParsers
from .parser import HarmonyParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    HarmonyParser: ("gpt_oss", "openai"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "HarmonyParser",
]
