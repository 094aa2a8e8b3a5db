"""phi: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

ASSISTANT = "<|assistant|>"
END = "<|end|>"
FUNCTOOLS = "functools"
IM_SEP = "<|im_sep|>"
SYSTEM = "<|system|>"
USER = "<|user|>"
