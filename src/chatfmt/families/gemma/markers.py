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
#: FunctionGemma: calls, declarations and results, and its string quote.
START_FUNCTION_CALL = "<start_function_call>"
END_FUNCTION_CALL = "<end_function_call>"
START_FUNCTION_DECLARATION = "<start_function_declaration>"
END_FUNCTION_DECLARATION = "<end_function_declaration>"
START_FUNCTION_RESPONSE = "<start_function_response>"
END_FUNCTION_RESPONSE = "<end_function_response>"
ESCAPE = "<escape>"

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
#: FunctionGemma: ``<start_function_call>call:NAME{k:<escape>text<escape>,n:3}<end_function_call>``.
FUNCTIONGEMMA_FORMAT = ToolCallFormat(
    "functiongemma",
    "bare_keys",
    call_begin=START_FUNCTION_CALL + "call:",
    name_sep="{",
    call_end="}" + END_FUNCTION_CALL,
    key_close=":",
    value_open=ESCAPE,
    value_close=ESCAPE,
)
