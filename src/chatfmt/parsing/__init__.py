"""Parse model output back into OpenAI assistant messages, whole or streaming.

``parse(text, template)`` returns an assistant message; ``StreamParser(template)``
turns chunks into typed deltas (``ContentDelta``, ``ReasoningDelta``,
``ToolCallDelta``); ``merge_deltas`` folds deltas into the message ``parse`` returns
(``parse`` is the stream parser fed once). The message ends at the template's
end-of-turn marker; ``ParsedMessage`` (which reads as an OpenAI message dict) carries
``finish_reason`` and the ``trailing_text`` written after that marker. OpenAI's wire
shapes of both are made by :mod:`chatfmt.parsing.openai_wire`.
"""

from __future__ import annotations

from .base import REASONING_PARSERS, TOOL_PARSERS, StreamParser, end_of_turn_markers, parse
from .deltas import (
    ContentDelta,
    Delta,
    FinishReason,
    ParsedMessage,
    ParsedToolCall,
    ReasoningDelta,
    ToolCallDelta,
    merge_deltas,
)
from .derived import DerivedFormat, derive_parser
from .derived_format import ToolCallFormat

__all__ = [
    "REASONING_PARSERS",
    "TOOL_PARSERS",
    "ContentDelta",
    "Delta",
    "DerivedFormat",
    "FinishReason",
    "ParsedMessage",
    "ParsedToolCall",
    "ReasoningDelta",
    "StreamParser",
    "ToolCallDelta",
    "ToolCallFormat",
    "derive_parser",
    "end_of_turn_markers",
    "merge_deltas",
    "parse",
]
