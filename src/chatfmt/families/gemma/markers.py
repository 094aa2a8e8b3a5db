"""gemma: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BOS = "<bos>"
CHANNEL_CLOSE = "<channel|>"
CHANNEL_OPEN = "<|channel>"
END_OF_TURN = "<end_of_turn>"
EOS = "<eos>"
QUOTE = '<|"|>'
START_OF_TURN = "<start_of_turn>"
TOOL_CALL_CLOSE = "<tool_call|>"
TOOL_CALL_OPEN = "<|tool_call>"
TOOL_RESPONSE_OPEN = "<|tool_response>"
TURN_CLOSE = "<turn|>"

#: Gemma 4: ``<|tool_call>call:NAME{k:<|"|>text<|"|>,n:3}<tool_call|>`` per call.
GEMMA4_FORMAT = ToolCallFormat(
    "gemma4",
    "bare_keys",
    call_begin=TOOL_CALL_OPEN + "call:",
    name_sep="{",
    call_end="}" + TOOL_CALL_CLOSE,
    key_close=":",
    value_open=QUOTE,
    value_close=QUOTE,
)
