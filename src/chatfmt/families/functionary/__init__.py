"""functionary: templates, parsers and control tokens (see :mod:`chatfmt.families`)."""

from __future__ import annotations

from .. import ReasoningParsers, ToolParsers
from .parser import FunctionaryV31Parser, FunctionaryV32Parser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    FunctionaryV31Parser: ("functionary_v3_1", "functionary_v3_llama_3_1"),
    FunctionaryV32Parser: ("functionary_v3_2", "functionary"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "FunctionaryV31Parser",
    "FunctionaryV32Parser",
    "ReasoningParsers",
    "ToolParsers",
]
