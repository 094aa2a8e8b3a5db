"""Parse model output back into OpenAI assistant messages, whole or streaming.

``parse(text, template)`` returns an assistant message; ``StreamParser(template)``
turns chunks into OpenAI ``chat.completion.chunk`` deltas; ``merge_deltas`` folds
deltas into the message ``parse`` returns (``parse`` is the stream parser fed once).
The message ends at the template's end-of-turn marker; ``ParsedMessage`` carries
``finish_reason`` and the ``trailing_text`` written after that marker.
"""

from __future__ import annotations

from .base import (
    REASONING_PARSERS,
    TOOL_PARSERS,
    Delta,
    ParsedMessage,
    StreamParser,
    end_of_turn_markers,
    merge_deltas,
    parse,
)
from .derived import DerivedFormat, derive_parser
from .derived_format import ToolCallFormat

__all__ = [
    "REASONING_PARSERS",
    "TOOL_PARSERS",
    "Delta",
    "DerivedFormat",
    "ParsedMessage",
    "StreamParser",
    "ToolCallFormat",
    "derive_parser",
    "end_of_turn_markers",
    "merge_deltas",
    "parse",
]
