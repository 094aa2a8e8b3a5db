"""The gemma family — Google Gemma chat formats: Gemma 1/2 (no system role) and Gemma 3 (system folded into the first user turn).

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import FUNCTIONGEMMA_FORMAT, GEMMA4_FORMAT
from .parser import FunctionGemmaParser, Gemma4Parser, Gemma4Reasoning
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    Gemma4Parser: (),
    FunctionGemmaParser: (),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    Gemma4Reasoning: (),
}

#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    Gemma4Parser: (GEMMA4_FORMAT,),
    FunctionGemmaParser: (FUNCTIONGEMMA_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "FunctionGemmaParser",
    "Gemma4Parser",
    "Gemma4Reasoning",
]
