"""Token ids, loss masks and injection safety: :func:`load_tokenizer` and :func:`encode`."""

from __future__ import annotations

from .control import check_tokenizer
from .encode import IGNORE_INDEX, Encoding, encode, encode_batch, encode_segments
from .tokenizer import (
    HFTokenizer,
    SentencePieceTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    load_tokenizer,
)

__all__ = [
    "IGNORE_INDEX",
    "Encoding",
    "HFTokenizer",
    "SentencePieceTokenizer",
    "TiktokenTokenizer",
    "Tokenizer",
    "check_tokenizer",
    "encode",
    "encode_batch",
    "encode_segments",
    "load_tokenizer",
]
