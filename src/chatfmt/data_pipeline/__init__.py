"""Fine-tuning datasets at scale: read, convert ShareGPT, tokenize with workers or Ray."""

from __future__ import annotations

from .convert import PromptParser, convert_dataset, convert_prompt
from .pipeline import Summary, tokenize_dataset
from .records import record_to_conversation, sharegpt_to_messages

__all__ = [
    "PromptParser",
    "Summary",
    "convert_dataset",
    "convert_prompt",
    "record_to_conversation",
    "sharegpt_to_messages",
    "tokenize_dataset",
]
