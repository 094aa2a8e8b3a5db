"""lfm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

STARTOFTEXT = "<|startoftext|>"
TOOL_CALL_END = "<|tool_call_end|>"
TOOL_CALL_START = "<|tool_call_start|>"

#: ``<|tool_call_start|>[NAME(k=v, …), …]<|tool_call_end|>``.
LFM2_FORMAT = ToolCallFormat("lfm2", "pythonic", call_begin=TOOL_CALL_START, call_end=TOOL_CALL_END)
