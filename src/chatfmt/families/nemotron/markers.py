"""nemotron: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

SPECIAL_12 = "<SPECIAL_12>"
TOOLCALL = "<TOOLCALL>"
TOOLCALL_CLOSE = "</TOOLCALL>"
