"""granite: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

END_OF_ROLE = "<|end_of_role|>"
END_OF_TEXT = "<|end_of_text|>"
RESPONSE = "<response>"
RESPONSE_CLOSE = "</response>"
START_OF_ROLE = "<|start_of_role|>"
TOOL_CALL = "<tool_call>"
TOOL_CALL_TOKEN = "<|tool_call|>"
TOOL_CALL_CLOSE = "</tool_call>"
#: Granite 3.2 thinking: plain-text phrases (no special tokens) around the reasoning; some
#: (quantized) models write the short forms.
THOUGHT_PROCESS = ("Here is my thought process:", "Here's my thought process:")
MY_RESPONSE = ("Here is my response:", "Here's my response:")

#: Granite 3: ``<|tool_call|>[{"name": …, "arguments": {…}}, …]``.
GRANITE3_FORMAT = ToolCallFormat("granite3", "json_list", call_begin=TOOL_CALL_TOKEN)
#: Granite 4: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` per call.
GRANITE4_FORMAT = ToolCallFormat(
    "granite4", "json_call", call_begin=TOOL_CALL, call_end=TOOL_CALL_CLOSE
)
