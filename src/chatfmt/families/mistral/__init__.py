"""The mistral family — Mistral chat formats: v1 (7B v0.1/v0.2), v3 (v0.3, tools), v3-tekken (Nemo), v7 (Small 3.x) and Devstral.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import MISTRAL_ARGS_FORMAT, MISTRAL_CALL_ID_FORMAT, MISTRAL_LIST_FORMAT
from .parser import MistralParser, MistralThinkParser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    MistralParser: (),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {
    MistralThinkParser: ("magistral", "ministral3"),
}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    MistralParser: (
        MISTRAL_LIST_FORMAT,
        MISTRAL_ARGS_FORMAT,
        MISTRAL_CALL_ID_FORMAT,
    ),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "MistralParser",
    "MistralThinkParser",
]
