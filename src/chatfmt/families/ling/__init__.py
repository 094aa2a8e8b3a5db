"""The ling family — inclusionAI Ling 3.0 (Bailing V3): ``<role>…</role>`` turns, GLM-4.5-style tool calls.

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
