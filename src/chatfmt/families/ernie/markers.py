"""ernie: control tokens, written once for its parsers."""

from __future__ import annotations

TOOL_CALL = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
RESPONSE = "<response>"
RESPONSE_CLOSE = "</response>"
