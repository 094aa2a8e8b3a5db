"""gemma: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

BOS = "<bos>"
CHANNEL_CLOSE = "<channel|>"
CHANNEL_OPEN = "<|channel>"
END_OF_TURN = "<end_of_turn>"
EOS = "<eos>"
QUOTE = '<|"|>'
START_OF_TURN = "<start_of_turn>"
TOOL_CALL_CLOSE = "<tool_call|>"
TOOL_CALL_OPEN = "<|tool_call>"
TOOL_RESPONSE_OPEN = "<|tool_response>"
TURN_CLOSE = "<turn|>"
