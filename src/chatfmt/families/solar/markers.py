"""solar: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BEGIN = "<|begin|>"
BEGIN_ASSISTANT = "<|begin|>assistant"
CALLS = "<|calls|>"
CONTENT = "<|content|>"
END = "<|end|>"
FLUSH = "<|flush|>"
THINK = "<|think|>"
TOOL_CALLS = "<|tool_calls|>"
TOOL_CALL_ARGS = "<|tool_call:args|>"
TOOL_CALL_BEGIN = "<|tool_call:begin|>"
TOOL_CALL_END = "<|tool_call:end|>"
TOOL_CALL_NAME = "<|tool_call:name|>"

#: ``<|tool_calls|><|tool_call:begin|>id<|tool_call:name|>name<|tool_call:args|>{…}<|tool_call:end|>…<|calls|>``.
SOLAR_OPEN_FORMAT = ToolCallFormat(
    "solar_open",
    "json_arguments",
    calls_begin=TOOL_CALLS,
    calls_end=CALLS,
    call_begin=TOOL_CALL_BEGIN,
    call_end=TOOL_CALL_END,
    name_open=TOOL_CALL_NAME,
    name_sep=TOOL_CALL_ARGS,
)
