"""mistral: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

ARGS = "[ARGS]"
AVAILABLE_TOOLS = "[AVAILABLE_TOOLS]"
AVAILABLE_TOOLS_CLOSE = "[/AVAILABLE_TOOLS]"
BOS = "<s>"
CALL_ID = "[CALL_ID]"
EOS = "</s>"
IMG = "[IMG]"
INST = "[INST]"
INST_CLOSE = "[/INST]"
SYSTEM_PROMPT = "[SYSTEM_PROMPT]"
SYSTEM_PROMPT_CLOSE = "[/SYSTEM_PROMPT]"
THINK = "[THINK]"
THINK_CLOSE = "[/THINK]"
TOOL_CALLS = "[TOOL_CALLS]"
TOOL_CONTENT = "[TOOL_CONTENT]"
TOOL_RESULTS = "[TOOL_RESULTS]"
TOOL_RESULTS_CLOSE = "[/TOOL_RESULTS]"

#: v3: ``[TOOL_CALLS][{"name": …, "arguments": …}, …]``.
MISTRAL_LIST_FORMAT = ToolCallFormat("mistral v3", "json_list", call_begin=TOOL_CALLS)
#: v11+ (Devstral, Magistral): ``[TOOL_CALLS]name[ARGS]{…}`` per call.
MISTRAL_ARGS_FORMAT = ToolCallFormat(
    "mistral v11", "json_arguments", call_begin=TOOL_CALLS, name_sep=ARGS
)
#: v7 (Small 3.x): ``[TOOL_CALLS]name[CALL_ID]id[ARGS]{…}`` per call.
MISTRAL_CALL_ID_FORMAT = ToolCallFormat(
    "mistral v7", "json_arguments", call_begin=TOOL_CALLS, name_sep=CALL_ID, id_end=ARGS
)
