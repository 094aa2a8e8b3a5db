"""ernie: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BEGIN_OF_SENTENCE = "<|begin_of_sentence|>"
END_OF_SENTENCE = "<|end_of_sentence|>"
EOS = "</s>"
TOOL_CALL = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
RESPONSE = "<response>"
RESPONSE_CLOSE = "</response>"

#: ``<tool_call>\n{"name": …, "arguments": …}\n</tool_call>``, one block per call (Hermes-like).
ERNIE45_FORMAT = ToolCallFormat(
    "ernie45", "json_call", call_begin=TOOL_CALL, call_end=TOOL_CALL_CLOSE
)
