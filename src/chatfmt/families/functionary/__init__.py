"""The functionary family — MeetKai Functionary v3.1 and v3.2 (Llama 3.1 based): official Jinja templates with parsers.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import FUNCTIONARY_V31_FORMAT, FUNCTIONARY_V32_FORMAT
from .parser import FunctionaryV31Parser, FunctionaryV32Parser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    FunctionaryV31Parser: ("functionary_v3_1", "functionary_v3_llama_3_1"),
    FunctionaryV32Parser: ("functionary_v3_2", "functionary"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    FunctionaryV32Parser: (FUNCTIONARY_V32_FORMAT,),
    FunctionaryV31Parser: (FUNCTIONARY_V31_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "FunctionaryV31Parser",
    "FunctionaryV32Parser",
]
