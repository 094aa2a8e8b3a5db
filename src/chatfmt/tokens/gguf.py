"""The tokenizer stored in a GGUF file (llama.cpp): byte-level BPE or SentencePiece vocab.

BPE vocabs become a ``tokenizers`` spec (same pre-tokenizer as the original Hugging Face
tokenizer, chosen by ``tokenizer.ggml.pre``); SentencePiece (``llama``) vocabs become a
SentencePiece model proto with the same pieces, scores and types.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TokenizationError
from .tokenizer import HFTokenizer, SentencePieceTokenizer, Tokenizer

_QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_DEEPSEEK_V3 = (
    r"\p{N}{1,3}",
    r"[一-龥぀-ゟ゠-ヿ]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)


def _split(regex: str) -> dict[str, Any]:
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


_BYTE_LEVEL = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": False,
    "use_regex": False,
}
_BYTE_LEVEL_REGEX = {**_BYTE_LEVEL, "use_regex": True}

#: ``tokenizer.ggml.pre`` → (normalizer, pre-tokenizer, ignore_merges) of the original tokenizer.
_PRE: dict[str, tuple[dict[str, Any] | None, dict[str, Any], bool]] = {
    "qwen2": (
        {"type": "NFC"},
        {"type": "Sequence", "pretokenizers": [_split(_QWEN2), _BYTE_LEVEL]},
        False,
    ),
    "llama-bpe": (
        None,
        {"type": "Sequence", "pretokenizers": [_split(_LLAMA3), _BYTE_LEVEL]},
        True,
    ),
    "llama3": (None, {"type": "Sequence", "pretokenizers": [_split(_LLAMA3), _BYTE_LEVEL]}, True),
    "deepseek-v3": (
        None,
        {"type": "Sequence", "pretokenizers": [*(_split(r) for r in _DEEPSEEK_V3), _BYTE_LEVEL]},
        False,
    ),
    "smollm": (
        None,
        {
            "type": "Sequence",
            "pretokenizers": [{"type": "Digits", "individual_digits": True}, _BYTE_LEVEL_REGEX],
        },
        False,
    ),
    "gpt-2": (None, _BYTE_LEVEL_REGEX, False),
    "gpt2": (None, _BYTE_LEVEL_REGEX, False),
    "default": (None, _BYTE_LEVEL_REGEX, False),
}

# GGUF token types (same numbering as SentencePiece piece types).
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6


_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_NUMPY = {
    0: "<u1",
    1: "<i1",
    2: "<u2",
    3: "<i2",
    4: "<u4",
    5: "<i4",
    6: "<f4",
    7: "?",
    10: "<u8",
    11: "<i8",
    12: "<f8",
}
_STRING, _ARRAY = 8, 9


class _Cursor:
    """A little-endian reader over the GGUF header (metadata only; tensors are never read)."""

    def __init__(self, buf: Any) -> None:
        self.buf = buf
        self.pos = 0

    def scalar(self, fmt: str) -> Any:
        value = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.scalar("<Q")
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return raw.decode("utf-8", "surrogateescape")

    def value(self, kind: int) -> Any:
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = self.scalar("<I"), self.scalar("<Q")
            if item == _STRING:
                return [self.string() for _ in range(count)]
            if item in _NUMPY:
                dtype = np.dtype(_NUMPY[item])
                arr = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos)
                self.pos += dtype.itemsize * count
                return arr.tolist()
            return [self.value(item) for _ in range(count)]
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        raise TokenizationError(f"unknown GGUF value type {kind}")


def _read_fields(path: Path) -> dict[str, Any]:
    """The ``tokenizer.*`` metadata of a GGUF file (versions 2 and 3)."""
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm[:4] != b"GGUF":
                raise TokenizationError(f"{path}: not a GGUF file (bad magic)")
            cur = _Cursor(mm)
            cur.pos = 4
            version = cur.scalar("<I")
            if version < 2:
                raise TokenizationError(
                    f"{path}: GGUF version {version} is not supported (2 and 3 are)"
                )
            cur.scalar("<Q")  # tensor count
            n_kv = cur.scalar("<Q")
            out: dict[str, Any] = {}
            for _ in range(n_kv):
                key = cur.string()
                value = cur.value(cur.scalar("<I"))
                if key.startswith("tokenizer."):
                    out[key] = value
            return out
    except (OSError, ValueError, struct.error) as exc:
        raise TokenizationError(f"{path}: not a readable GGUF file ({exc})") from None


def read_gguf_chat_template(path: str | Path) -> str | None:
    """The chat template stored in a GGUF file, if any."""
    value = _read_fields(Path(path)).get("tokenizer.chat_template")
    return value if isinstance(value, str) else None


def load_gguf_tokenizer(path: Path, *, fast: bool = True) -> Tokenizer:
    """Load the tokenizer of a GGUF file (vocab-only files work too)."""
    f = _read_fields(path)
    model = f.get("tokenizer.ggml.model")
    tokens: list[str] = f.get("tokenizer.ggml.tokens") or []
    if not tokens:
        raise TokenizationError(f"{path}: the GGUF file has no tokenizer vocab")
    types: list[int] = f.get("tokenizer.ggml.token_type") or [_NORMAL] * len(tokens)
    bos_id, eos_id = f.get("tokenizer.ggml.bos_token_id"), f.get("tokenizer.ggml.eos_token_id")
    if model == "gpt2":
        return _bpe(path, f, tokens, types, bos_id, eos_id, fast=fast)
    if model == "llama":
        return _spm(path, f, tokens, types)
    raise TokenizationError(
        f"{path}: GGUF tokenizer model {model!r} is not supported (gpt2 BPE and llama SPM are)"
    )


def _bpe(
    path: Path,
    f: dict[str, Any],
    tokens: list[str],
    types: list[int],
    bos_id: Any,
    eos_id: Any,
    *,
    fast: bool,
) -> Tokenizer:
    pre = str(f.get("tokenizer.ggml.pre", "default"))
    if pre not in _PRE:
        raise TokenizationError(
            f"{path}: GGUF pre-tokenizer {pre!r} is not supported (known: {', '.join(sorted(_PRE))})"
        )
    normalizer, pre_tokenizer, ignore_merges = _PRE[pre]
    vocab: dict[str, int] = {}
    added = []
    for i, (tok, kind) in enumerate(zip(tokens, types)):
        if kind in (_CONTROL, _USER_DEFINED):
            added.append(
                {
                    "id": i,
                    "content": tok,
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": kind == _CONTROL,
                }
            )
        elif kind != _UNUSED:
            vocab.setdefault(tok, i)
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": vocab,
            "merges": list(f.get("tokenizer.ggml.merges") or []),
        },
    }
    config = {
        "bos_token": tokens[bos_id]
        if isinstance(bos_id, int) and 0 <= bos_id < len(tokens)
        else None,
        "eos_token": tokens[eos_id]
        if isinstance(eos_id, int) and 0 <= eos_id < len(tokens)
        else None,
        "add_bos_token": bool(f.get("tokenizer.ggml.add_bos_token", False)),
    }
    return HFTokenizer(spec, name=str(path), config=config, fast=fast)


def _spm(path: Path, f: dict[str, Any], tokens: list[str], types: list[int]) -> Tokenizer:
    try:
        from sentencepiece import sentencepiece_model_pb2 as pb
    except ImportError:
        raise TokenizationError(
            "SentencePiece GGUF vocabs need sentencepiece and protobuf"
        ) from None
    scores: list[float] = f.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
    proto = pb.ModelProto()  # type: ignore[attr-defined]
    unk = f.get("tokenizer.ggml.unknown_token_id", 0)
    for i, (tok, score, kind) in enumerate(zip(tokens, scores, types)):
        piece = proto.pieces.add()
        piece.piece = tok
        piece.score = float(score)
        if kind == _UNKNOWN and i != unk:
            kind = _CONTROL  # SentencePiece allows one unknown piece
        piece.type = kind if kind in (1, 2, 3, 4, 5, 6) else 1
    trainer = proto.trainer_spec
    trainer.model_type = pb.TrainerSpec.BPE  # type: ignore[attr-defined]
    trainer.vocab_size = len(tokens)
    trainer.byte_fallback = _BYTE in types
    used: set[int] = set()
    for name, key in (
        ("unk_id", "unknown"),
        ("bos_id", "bos"),
        ("eos_id", "eos"),
        ("pad_id", "padding"),
    ):
        value = f.get(f"tokenizer.ggml.{key}_token_id")
        if isinstance(value, int) and value not in used and 0 <= value < len(tokens):
            setattr(trainer, name, value)
            used.add(value)
        else:
            setattr(trainer, name, -1)
    norm = proto.normalizer_spec
    norm.name = "identity"
    norm.add_dummy_prefix = bool(f.get("tokenizer.ggml.add_space_prefix", True))
    norm.remove_extra_whitespaces = False
    norm.escape_whitespaces = True
    return SentencePieceTokenizer(
        proto.SerializeToString(),
        name=str(path),
        add_bos=bool(f.get("tokenizer.ggml.add_bos_token", True)),
    )
