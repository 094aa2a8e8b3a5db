"""apriel: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BEGIN_FINAL_RESPONSE = "[BEGIN FINAL RESPONSE]"
BOS = "<s>"
END = "<|end|>"
END_FINAL_RESPONSE = "[END FINAL RESPONSE]"
EOS = "</s>"
HERE_ARE_MY_REASONING_STEPS = "Here are my reasoning steps:"
TOOL_CALLS = "<tool_calls>"
TOOL_CALLS_CLOSE = "</tool_calls>"

#: ``<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>``.
APRIEL_FORMAT = ToolCallFormat(
    "apriel", "json_list", call_begin=TOOL_CALLS, call_end=TOOL_CALLS_CLOSE
)
