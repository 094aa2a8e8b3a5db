"""The ernie family — Baidu ERNIE 4.5: ``User:``/``Assistant:`` turns, ``<tool_call>`` JSON
calls, ``</think>``-closed reasoning.

Its templates, parsers and control tokens (``markers``); listed in
:data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import ERNIE45_FORMAT
from .parser import Ernie45Parser, Ernie45ThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    Ernie45Parser: ("ernie45_moe", "ernie-x1"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    Ernie45ThinkParser: (),
}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    Ernie45Parser: (ERNIE45_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "Ernie45Parser",
    "Ernie45ThinkParser",
]
