"""cohere: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

ACTION = "Action:"
BOS_TOKEN = "<BOS_TOKEN>"
CHATBOT_TOKEN = "<|CHATBOT_TOKEN|>"
END_ACTION = "<|END_ACTION|>"
END_OF_TURN_TOKEN = "<|END_OF_TURN_TOKEN|>"
END_RESPONSE = "<|END_RESPONSE|>"
END_TEXT = "<|END_TEXT|>"
END_THINKING = "<|END_THINKING|>"
END_TOOL_RESULT = "<|END_TOOL_RESULT|>"
FENCE = "```"
RESULTS = "<results>"
RESULTS_CLOSE = "</results>"
START_ACTION = "<|START_ACTION|>"
START_OF_TURN_TOKEN = "<|START_OF_TURN_TOKEN|>"
START_RESPONSE = "<|START_RESPONSE|>"
START_TEXT = "<|START_TEXT|>"
START_THINKING = "<|START_THINKING|>"
START_TOOL_RESULT = "<|START_TOOL_RESULT|>"
SYSTEM_TOKEN = "<|SYSTEM_TOKEN|>"
USER_TOKEN = "<|USER_TOKEN|>"

#: Command R7B / Command A: ``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": …, "parameters": {…}}, …]<|END_ACTION|>``.
COMMAND_R7B_FORMAT = ToolCallFormat(
    "command_r7b",
    "json_list",
    call_begin=START_ACTION,
    call_end=END_ACTION,
    name_key="tool_name",
    args_key="parameters",
    id_key="tool_call_id",
)
#: Command R: ``Action:`` and a ``json`` fence around ``[{"tool_name": …, "parameters": {…}}, …]``
#: (the JSON indented by 4).
COMMAND_R_FORMAT = ToolCallFormat(
    "command_r",
    "json_list",
    calls_begin=ACTION,
    call_begin=FENCE + "json",
    call_end=FENCE,
    name_key="tool_name",
    args_key="parameters",
)
