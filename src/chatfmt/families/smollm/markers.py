"""smollm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

END_OF_TEXT = "<|end_of_text|>"

#: SmolLM2-Instruct's default system prompt (no final period, as in the official template).
SMOLLM2_DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
