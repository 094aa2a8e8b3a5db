"""The cohere family — Cohere Command-R / Command-R+ (``default`` and ``tool_use`` templates) and Command R7B.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import COMMAND_R7B_FORMAT, COMMAND_R_FORMAT
from .parser import CommandAThinkParser, CommandRParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    CommandRParser: ("command-r", "command_r7b", "cohere"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    CommandAThinkParser: ("cohere_think",),
}

#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    CommandRParser: (COMMAND_R7B_FORMAT, COMMAND_R_FORMAT),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "CommandAThinkParser",
    "CommandRParser",
]
