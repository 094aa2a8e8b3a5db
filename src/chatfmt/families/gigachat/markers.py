"""gigachat: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

BOS = "<s>"
EOS = "</s>"
FUNCTION_CALL = "<|function_call|>"
MESSAGE_SEP = "<|message_sep|>"
ROLE_SEP = "<|role_sep|>"
