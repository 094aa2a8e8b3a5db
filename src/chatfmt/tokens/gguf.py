"""The tokenizer stored in a GGUF file (llama.cpp): byte-level BPE or SentencePiece vocab.

BPE vocabs become a ``tokenizers`` spec (same pre-tokenizer as the original Hugging Face
tokenizer, chosen by ``tokenizer.ggml.pre``); SentencePiece (``llama``) vocabs become a
SentencePiece model proto with the same pieces, scores and types.
"""

from __future__ import annotations

from functools import lru_cache
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


def gguf_reader(path: str | Path, error: type[Exception] = TokenizationError) -> Any:
    """A ``gguf.GGUFReader`` over ``path`` (its failures raised as ``error``)."""
    try:
        reader = _reader_class()
    except ImportError:  # pragma: no cover - gguf is a dependency of the tokenizers extra
        raise error("reading GGUF files needs the 'gguf' package") from None
    try:
        return reader(str(path))
    except (OSError, ValueError, IndexError) as exc:
        raise error(f"{path}: not a readable GGUF file ({exc})") from None


@lru_cache(maxsize=1)
def _reader_class() -> type:
    from gguf import GGUFReader

    dtypes: dict[tuple[Any, str], np.dtype[Any]] = {}

    class Reader(GGUFReader):
        """``GGUFReader`` reading through a plain array view of its memory map.

        The reader slices its ``data`` once per value (twice per string: a tokenizer has
        ~10⁵): slices of numpy's ``memmap`` subclass cost several times more than slices of
        a plain array over the same memory (which keeps the map open), and ``_get`` makes a
        scratch array and two dtype views per value where one cached dtype does.
        """

        @property
        def data(self) -> Any:
            return self._plain

        @data.setter
        def data(self, value: Any) -> None:
            self._plain = value.view(np.ndarray) if isinstance(value, np.memmap) else value

        def _get(
            self, offset: int, dtype: Any, count: int = 1, override_order: str | None = None
        ) -> Any:
            order = self.byte_order if override_order is None else override_order
            dt = dtypes.get((dtype, order))
            if dt is None:
                dt = dtypes[(dtype, order)] = np.dtype(dtype).newbyteorder(order)
            count = int(count)
            return self._plain[offset : offset + dt.itemsize * count].view(dt)[:count]

    return Reader


def field_value(field: Any) -> Any:
    """The Python value of a ``gguf`` ``ReaderField``: text, number, bool or a list of them."""
    from gguf import GGUFValueType

    def text(part: Any) -> str:
        return bytes(part).decode("utf-8", "surrogateescape")

    kind = field.types[0] if field.types else None
    if kind == GGUFValueType.STRING:
        return text(field.parts[field.data[0]])
    if kind == GGUFValueType.ARRAY:
        if field.types[-1] == GGUFValueType.STRING:
            return [text(field.parts[i]) for i in field.data]
        if len(field.types) > 2:  # nested arrays: not used by tokenizer metadata
            return None
        if not field.data:
            return []
        return np.concatenate([field.parts[i] for i in field.data]).tolist()
    if kind is None:
        return None
    return field.parts[field.data[0]].tolist()[0]


def _read_fields(path: Path) -> dict[str, Any]:
    """The ``tokenizer.*`` metadata of a GGUF file."""
    reader = gguf_reader(path)
    return {
        key: field_value(field)
        for key, field in reader.fields.items()
        if key.startswith("tokenizer.")
    }


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
