"""ChatML's control tokens, shared by the families that write ChatML turns."""

from __future__ import annotations

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
ENDOFTEXT = "<|endoftext|>"
