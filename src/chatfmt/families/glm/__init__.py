"""The glm family — GLM families: ChatGLM3, GLM-4 (glm-4-9b-chat), GLM-4.5/4.6 and GLM-4.7 (native templates).

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .markers import CHATGLM3_FORMAT, GLM4_FORMAT, GLM45_FORMAT
from .parser import ChatGLM3Parser, GLM4Parser, GLM45Parser
from .templates import TEMPLATES

#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    ChatGLM3Parser: (),
    GLM4Parser: ("glm-4",),
    GLM45Parser: ("glm4_moe", "glm46", "glm4.5", "glm4.6"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}
#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    GLM4Parser: (GLM4_FORMAT,),
    ChatGLM3Parser: (CHATGLM3_FORMAT,),
    GLM45Parser: (GLM45_FORMAT,),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "ChatGLM3Parser",
    "GLM4Parser",
    "GLM45Parser",
]
