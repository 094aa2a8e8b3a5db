"""llama: templates, parsers and control tokens (see :mod:`chatfmt.families`)."""

from __future__ import annotations

from ...parsing.pythonic import PythonicParser
from .. import ReasoningParsers, ToolParsers
from .parser import Llama3JsonParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    Llama3JsonParser: ("llama3", "llama3.1", "llama3.2", "llama4_json", "llama"),
    PythonicParser: ("llama4_pythonic", "llama32_pythonic"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "Llama3JsonParser",
    "PythonicParser",
    "ReasoningParsers",
    "ToolParsers",
]
