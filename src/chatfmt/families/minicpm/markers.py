"""minicpm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

BOS = "<s>"
FUNCTION_NAME = '<function name="'
