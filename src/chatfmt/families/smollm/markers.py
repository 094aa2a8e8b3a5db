"""smollm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

END_OF_TEXT = "<|end_of_text|>"
