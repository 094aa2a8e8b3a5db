"""The deepseek family — DeepSeek chat formats: Coder, V2, V3, V3.1 and the R1 distills, byte-identical to the official templates.

Its templates, parsers and control tokens (``markers``); listed in :data:`chatfmt.families.FAMILIES`.
"""

from __future__ import annotations

from .. import ReasoningParsers, ToolParsers
from .dsml_parser import DeepSeekDSMLParser
from .dsml_templates import TEMPLATES as DSML_TEMPLATES
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

__all__ = [
    "REASONING_PARSERS",
    "TEMPLATES",
    "TOOL_PARSERS",
    "DeepSeekDSMLParser",
    "DeepSeekV3Parser",
]
