"""solar: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

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
