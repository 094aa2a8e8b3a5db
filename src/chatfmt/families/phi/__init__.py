"""The phi family — Microsoft Phi chat formats: Phi-3 / Phi-3.5 (``<|user|>…<|end|>``) and Phi-4 (``<|im_start|>…<|im_sep|>``).

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import PHI4_MINI_FORMAT
from .parser import Phi4Parser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    Phi4Parser: ("phi4_mini_json",),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}
#: How the family's tool parsers' calls are written.
TOOL_CALL_FORMATS: ToolCallFormats = {
    Phi4Parser: (PHI4_MINI_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "Phi4Parser",
]
