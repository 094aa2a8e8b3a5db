"""The smollm family — HuggingFaceTB SmolLM2-Instruct (ChatML with a default system turn) and SmolLM3 (ChatML with a metadata system turn and ``/think`` / ``/no_think`` modes).

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolParsers
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}

__all__ = ["REASONING_PARSERS", "TEMPLATES", "TOOL_PARSERS", "ReasoningParsers", "ToolParsers"]
