"""spark: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

END_OF_SENTENCE = "<｜end▁of▁sentence｜>"
START_OF_SENTENCE = "<｜start▁of▁sentence｜>"
