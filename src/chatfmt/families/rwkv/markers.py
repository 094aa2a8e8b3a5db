"""rwkv: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

RWKV_TOKENIZER_END_OF_TEXT = "<|rwkv_tokenizer_end_of_text|>"
