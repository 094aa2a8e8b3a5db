"""The deepseek family — DeepSeek chat formats: Coder, V2, V3, V3.1 and the R1 distills, byte-identical to the official templates.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolCallFormats, ToolParsers
from .dsml_parser import DeepSeekDSMLParser
from .dsml_templates import TEMPLATES as DSML_TEMPLATES
from .markers import DEEPSEEK_V3_FORMAT, DEEPSEEK_V31_FORMAT, DSML_V4_FORMAT, DSML_V32_FORMAT
from .parser import DeepSeekV3Parser
from .templates import TEMPLATES as V3_TEMPLATES

#: The family's templates.
TEMPLATES = (*V3_TEMPLATES, *DSML_TEMPLATES)
#: Tool parsers of the family, each with its extra names.
TOOL_PARSERS: ToolParsers = {
    DeepSeekV3Parser: ("deepseek_v31", "deepseek", "deepseek_r1"),
    DeepSeekDSMLParser: ("deepseek_v4", "deepseek-v32", "deepseek-v4", "dsml"),
}
#: Reasoning parsers of the family, each with its extra names.
REASONING_PARSERS: ReasoningParsers = {}

#: How the family's tool parsers' calls are written (checked against its templates).
TOOL_CALL_FORMATS: ToolCallFormats = {
    DeepSeekV3Parser: (DEEPSEEK_V3_FORMAT, DEEPSEEK_V31_FORMAT),
    DeepSeekDSMLParser: (DSML_V32_FORMAT, DSML_V4_FORMAT),
}

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_CALL_FORMATS",
    "TOOL_PARSERS",
    "DeepSeekDSMLParser",
    "DeepSeekV3Parser",
]
