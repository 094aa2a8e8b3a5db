"""The llama family — Meta Llama chat formats: Llama 2 ``[INST]``, the short Llama 3 template and Llama 3.1/3.2/3.3.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from ...parsing.pythonic import PythonicParser
from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import (
    LLAMA3_JSON_FORMAT,
    LLAMA4_JSON_FORMAT,
    LLAMA4_PYTHONIC_FORMAT,
    PYTHONIC_FORMAT,
)
from .parser import Llama3JsonParser, Llama4Parser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    Llama3JsonParser: ("llama3", "llama3.1", "llama3.2", "llama4_json", "llama"),
    PythonicParser: ("llama32_pythonic",),
    Llama4Parser: ("llama4_pythonic",),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    Llama3JsonParser: (LLAMA3_JSON_FORMAT,),
    PythonicParser: (PYTHONIC_FORMAT,),
    Llama4Parser: (LLAMA4_PYTHONIC_FORMAT, LLAMA4_JSON_FORMAT),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "Llama3JsonParser",
    "Llama4Parser",
    "PythonicParser",
]
