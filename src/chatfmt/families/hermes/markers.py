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

#: The tool section of a system message in the Hermes/Qwen form (Qwen2.5, Qwen3, QwQ, and
#: :data:`chatfmt.tool_format.TOOL_FORMATS` ``hermes``): intro, one tool JSON per line, outro.
TOOLS_INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
TOOL_RESPONSE = "<tool_response>\n"
TOOL_RESPONSE_CLOSE = "\n</tool_response>"
