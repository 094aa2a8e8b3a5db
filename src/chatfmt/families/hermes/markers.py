"""hermes: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BEGIN_OF_TEXT = "<|begin_of_text|>"
END_OF_TEXT = "<|end_of_text|>"
TOOL_CALL = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

#: ``<tool_call>\n{"name": …, "arguments": …}\n</tool_call>``, one block per call.
HERMES_FORMAT = ToolCallFormat(
    "hermes", "json_call", call_begin=TOOL_CALL, call_end=TOOL_CALL_CLOSE
)
