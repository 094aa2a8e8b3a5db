"""apertus: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

ASSISTANT_END = "<|assistant_end|>"
BOS = "<s>"
INNER_PREFIX = "<|inner_prefix|>"
INNER_SUFFIX = "<|inner_suffix|>"
TOOLS_PREFIX = "<|tools_prefix|>"
TOOLS_SUFFIX = "<|tools_suffix|>"
