"""misc: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

ASSISTANT = "<|assistant|>"
END = "<|end|>"
EOS = "</s>"
RESERVED_106 = "<reserved_106>"
RESERVED_107 = "<reserved_107>"
SYSTEM = "<|system|>"
USER = "<|user|>"
