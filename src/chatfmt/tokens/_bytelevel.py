"""Byte-level BPE helpers: the GPT-2 byte↔unicode alphabet and a tiktoken core built from a BPE vocab.

Byte-level BPE vocabularies (GPT-2, Qwen, Llama 3, DeepSeek, SmolLM …) store each token
as a string over a 256-character alphabet that stands for raw bytes. Converting the
vocab to raw bytes lets ``tiktoken`` encode with the same ranks, which is several
times faster than ``tokenizers`` for long texts. :func:`tiktoken_ranks` only succeeds
when the two algorithms provably agree on the merge order (ids grow with merge order
and every multi-byte token comes from a merge).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

#: The GPT-2 pre-tokenizer pattern (``ByteLevel(use_regex=True)``).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


@cache
def byte_to_char() -> dict[int, str]:
    """The byte → printable character map used by byte-level BPE vocabularies."""
    keep = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table: dict[int, str] = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@cache
def char_to_byte() -> dict[str, int]:
    return {c: b for b, c in byte_to_char().items()}


def token_bytes(token: str) -> bytes | None:
    """Raw bytes of a byte-level token string, or ``None`` if it is not one."""
    table = char_to_byte()
    try:
        return bytes(table[c] for c in token)
    except KeyError:
        return None


def _merge_pairs(merges: Sequence[Any]) -> list[tuple[str, str]]:
    out = []
    for m in merges:
        if isinstance(m, str):
            a, b = m.split(" ", 1)
        else:
            a, b = m[0], m[1]
        out.append((a, b))
    return out


def tiktoken_ranks(vocab: Mapping[str, int], merges: Sequence[Any]) -> dict[bytes, int] | None:
    """Ranks for ``tiktoken`` equal to the vocab ids, or ``None`` when not equivalent.

    Equivalent means: every token is byte-level; every multi-byte token is produced
    by some merge; the ids of merge results increase with merge order (so
    "lowest rank first" equals "earliest merge first"); all 256 bytes are present.
    """
    ranks: dict[bytes, int] = {}
    for tok, idx in vocab.items():
        raw = token_bytes(tok)
        if raw is None or raw in ranks:
            return None
        ranks[raw] = idx
    if any(bytes([b]) not in ranks for b in range(256)):
        return None
    produced: set[int] = set()
    last = -1
    for a, b in _merge_pairs(merges):
        found = vocab.get(a + b)
        if found is None:
            return None
        idx = found
        if idx in produced:
            continue
        if idx < last:
            return None
        last = idx
        produced.add(idx)
    for raw, idx in ranks.items():
        if len(raw) > 1 and idx not in produced:
            return None
    return ranks


def pattern_of(pre_tokenizer: Mapping[str, Any] | None) -> str | None:
    """The single regex a ``tokenizer.json`` pre-tokenizer applies, if it is that simple.

    Accepts ``ByteLevel(use_regex=True, add_prefix_space=False)`` and
    ``Sequence[Split(Regex, Isolated), ByteLevel(use_regex=False, add_prefix_space=False)]``.
    """
    if not pre_tokenizer:
        return None
    kind = pre_tokenizer.get("type")
    if kind == "ByteLevel":
        if pre_tokenizer.get("use_regex", True) and not pre_tokenizer.get(
            "add_prefix_space", False
        ):
            return GPT2_PATTERN
        return None
    if kind != "Sequence":
        return None
    parts = pre_tokenizer.get("pretokenizers") or []
    if len(parts) != 2:
        return None
    split, level = parts
    if (
        split.get("type") != "Split"
        or split.get("behavior") != "Isolated"
        or split.get("invert")
        or "Regex" not in (split.get("pattern") or {})
    ):
        return None
    if level.get("type") != "ByteLevel" or level.get("use_regex") or level.get("add_prefix_space"):
        return None
    return str(split["pattern"]["Regex"])
