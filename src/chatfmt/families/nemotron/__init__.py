"""The nemotron family — NVIDIA Nemotron: Nemotron Nano v2 (``<TOOLCALL>[…]</TOOLCALL>`` JSON calls) and Nemotron 3 Nano (ChatML with Qwen3-Coder-style XML calls); both reason in ``<think>``.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import NEMOTRON_JSON_FORMAT
from .parser import NemotronJsonParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    NemotronJsonParser: (),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    NemotronJsonParser: (NEMOTRON_JSON_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "NemotronJsonParser",
]
