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

#: MiniMax-M2: ``<minimax:tool_call><invoke name="NAME"><parameter name="K">V</parameter>…</invoke>…</minimax:tool_call>``.
MINIMAX_M2_FORMAT = ToolCallFormat(
    "minimax_m2",
    "xml_pairs",
    calls_begin=MINIMAX_TOOL_CALL,
    calls_end=MINIMAX_TOOL_CALL_CLOSE,
    call_begin='<invoke name="',
    name_sep='">',
    call_end="</invoke>",
    key_open='<parameter name="',
    key_close='">',
    value_close="</parameter>",
)
M3 = "]<]minimax[>["
#: MiniMax-M3: ``]<]minimax[>[<tool_call>`` … ``]<]minimax[>[<invoke name="NAME">`` then
#: ``]<]minimax[>[<K>V]<]minimax[>[</K>`` per argument.
MINIMAX_M3_FORMAT = ToolCallFormat(
    "minimax_m3",
    "xml_pairs",
    calls_begin=M3 + "<tool_call>",
    calls_end=M3 + "</tool_call>",
    call_begin=M3 + '<invoke name="',
    name_sep='">',
    call_end=M3 + "</invoke>",
    key_open=M3 + "<",
    key_close=">",
    value_close=M3 + "</{key}>",
)
