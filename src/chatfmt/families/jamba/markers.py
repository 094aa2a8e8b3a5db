"""jamba: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

TOOL_CALLS = "<tool_calls>"
TOOL_CALLS_CLOSE = "</tool_calls>"
BOS = "<|startoftext|>"
EOS = "<|endoftext|>"
BOM = "<|bom|>"
EOM = "<|eom|>"

#: ``<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>`` (a JSON list per block).
JAMBA_FORMAT = ToolCallFormat(
    "jamba", "json_list", call_begin=TOOL_CALLS, call_end=TOOL_CALLS_CLOSE
)
