"""minimax: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

END_OF_SENTENCE = "<end_of_sentence>"
MESSAGE_END = "[e~["
MINIMAX_TOOL_CALL = "<minimax:tool_call>"
MINIMAX_TOOL_CALL_CLOSE = "</minimax:tool_call>"
MM_THINK = "<mm:think>"
MM_THINK_CLOSE = "</mm:think>"
TOOL_CALLS = "<tool_calls>"
TOOL_CALLS_CLOSE = "</tool_calls>"

#: MiniMax-M1: ``<tool_calls>{"name": …, "arguments": …}\n…</tool_calls>``.
MINIMAX_M1_FORMAT = ToolCallFormat(
    "minimax_m1", "json_call", call_begin=TOOL_CALLS, call_end=TOOL_CALLS_CLOSE
)
