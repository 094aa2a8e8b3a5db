"""lfm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

STARTOFTEXT = "<|startoftext|>"
TOOL_CALL_END = "<|tool_call_end|>"
TOOL_CALL_START = "<|tool_call_start|>"
