"""The internlm family — InternLM families: InternLM2/2.5 and InternLM3 (native), and LMDeploy's InternLM v1 templates.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import INTERNLM2_FORMAT
from .parser import InternLM2Parser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    InternLM2Parser: ("internlm", "internlm3", "interns1"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}

#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    InternLM2Parser: (INTERNLM2_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "InternLM2Parser",
]
