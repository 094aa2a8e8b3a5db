"""The qwen family — Qwen chat formats: Qwen 1/1.5/2 (ChatML), Qwen2.5, Qwen3 and QwQ (ChatML + Hermes-style tools).

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from ...parsing.xml_function import Qwen3CoderParser
from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .coder_templates import TEMPLATES as CODER_TEMPLATES
from .markers import QWEN3_CODER_FORMAT
from .parser import Qwen3ThinkParser
from .templates import TEMPLATES as CHAT_TEMPLATES

#: The family's templates.
TEMPLATES = (*CHAT_TEMPLATES, *CODER_TEMPLATES)
#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    Qwen3CoderParser: ("qwen3_xml", "qwen3coder", "qwen35"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    Qwen3ThinkParser: (),
}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    Qwen3CoderParser: (QWEN3_CODER_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "Qwen3CoderParser",
    "Qwen3ThinkParser",
]
