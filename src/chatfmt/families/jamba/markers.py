"""jamba: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

TOOL_CALLS = "<tool_calls>"
TOOL_CALLS_CLOSE = "</tool_calls>"
BOS = "<|startoftext|>"
EOS = "<|endoftext|>"
BOM = "<|bom|>"
EOM = "<|eom|>"
