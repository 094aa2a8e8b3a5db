"""qwen: templates, parsers and control tokens (see :mod:`chatfmt.families`)."""

from __future__ import annotations

from ...parsing.xml_function import Qwen3CoderParser
from .. import ReasoningParsers, ToolParsers
from .coder_templates import TEMPLATES as CODER_TEMPLATES
from .templates import TEMPLATES as CHAT_TEMPLATES

#: The family's templates.
TEMPLATES = (*CHAT_TEMPLATES, *CODER_TEMPLATES)
#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    Qwen3CoderParser: ("qwen3_xml", "qwen3coder", "qwen35"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "Qwen3CoderParser",
    "ReasoningParsers",
    "ToolParsers",
]
