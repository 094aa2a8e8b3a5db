"""gpt_oss: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

CALL = "<|call|>"
CHANNEL = "<|channel|>"
CONSTRAIN = "<|constrain|>"
END = "<|end|>"
MESSAGE = "<|message|>"
RETURN = "<|return|>"
START = "<|start|>"
