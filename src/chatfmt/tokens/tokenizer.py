"""Tokenizer adapters: one small interface over ``tokenizers``, SentencePiece, tiktoken and GGUF vocabs.

An adapter encodes *ordinary* text (never matching special tokens), batched, with
the character offset where each token starts; maps special-token strings to ids;
knows BOS/EOS; and decodes. :func:`load_tokenizer` picks the adapter for a path.
"""

from __future__ import annotations

import base64
import json
import os
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TokenizationError
from ..textfile import read_text
from . import _bytelevel

#: ids and character start offsets of the tokens of one run of text.
Run = tuple[np.ndarray, np.ndarray]

_DEFAULT_THREADS = max(1, min(8, os.cpu_count() or 1))


class Tokenizer(ABC):
    """The adapter interface chatfmt tokenizes through.

    ``special_tokens`` maps every string the tokenizer matches atomically (added /
    control tokens) to its id; only template CONTROL text is ever split on them.
    ``add_bos`` says whether the model's own tokenizer prepends BOS by default.
    """

    name: str = ""
    kind: str = ""
    special_tokens: Mapping[str, int]
    bos_token: str | None = None
    eos_token: str | None = None
    add_bos: bool = False
    #: Worker threads for batched encoding (1 inside multiprocessing workers).
    threads: int = _DEFAULT_THREADS

    # ------------------------------------------------------------------ subclass API
    @abstractmethod
    def encode_runs(self, texts: Sequence[str], first: Sequence[bool] | None = None) -> list[Run]:
        """Encode ordinary texts (no special-token parsing) with each token's start offset.

        ``first[i]`` is true when ``texts[i]`` starts the sequence (matters for
        tokenizers that add a prefix space only at the start).
        """

    @abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (special tokens included as their strings)."""

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of ids (including special tokens)."""

    # ------------------------------------------------------------------ shared helpers
    def encode_ordinary_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Ids of each text, encoded as ordinary text (special-token strings stay text)."""
        return [ids.tolist() for ids, _ in self.encode_runs(texts)]

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Encode ``text`` like the model's tokenizer: special-token strings become their ids.

        ``add_special_tokens`` prepends BOS when the model's tokenizer does.
        """
        ids: list[int] = []
        if add_special_tokens and self.add_bos and self.bos_id is not None:
            ids.append(self.bos_id)
        pieces: list[tuple[str, int | None]] = []
        pos = 0
        pattern = self.special_pattern
        if pattern is not None:
            for m in pattern.finditer(text):
                if m.start() > pos:
                    pieces.append((text[pos : m.start()], None))
                pieces.append((m.group(), self.special_id_of(m.group())))
                pos = m.end()
        if pos < len(text):
            pieces.append((text[pos:], None))
        runs = [t for t, i in pieces if i is None]
        firsts = [k == 0 for k, (_, i) in enumerate(pieces) if i is None]
        encoded = iter(self.encode_runs(runs, firsts))
        for _, special in pieces:
            ids.extend(next(encoded)[0].tolist() if special is None else [special])
        return ids

    def token_id(self, token: str) -> int | None:
        """Id of a special-token string (``None`` if the tokenizer has no such token)."""
        return self.special_tokens.get(token)

    def special_id_of(self, matched: str) -> int:
        """Id of a :attr:`special_pattern` match (which may carry stripped whitespace)."""
        found = self.special_tokens.get(matched)
        return found if found is not None else self.special_tokens[matched.strip()]

    @property
    def bos_id(self) -> int | None:
        return None if self.bos_token is None else self.special_tokens.get(self.bos_token)

    @property
    def eos_id(self) -> int | None:
        return None if self.eos_token is None else self.special_tokens.get(self.eos_token)

    def token_text(self, token: int) -> str:
        """Text of one token (for tables); partial UTF-8 shows as U+FFFD."""
        return self.decode([token])

    #: Special tokens that swallow whitespace on their left / right (``lstrip``/``rstrip``).
    strip_flags: Mapping[str, tuple[bool, bool]] = {}

    @cached_property
    def special_pattern(self) -> re.Pattern[str] | None:
        """Regex matching any special-token string (longest first), with lstrip/rstrip whitespace."""
        if not self.special_tokens:
            return None
        alts = []
        for tok in sorted(self.special_tokens, key=len, reverse=True):
            lstrip, rstrip = self.strip_flags.get(tok, (False, False))
            alts.append((r"\s*" if lstrip else "") + re.escape(tok) + (r"\s*" if rstrip else ""))
        return re.compile("|".join(alts))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} vocab={self.vocab_size}>"


# ---------------------------------------------------------------------- offsets
def char_starts_from_bytes(text: str, ids: np.ndarray, token_len: np.ndarray) -> np.ndarray:
    """Character start offset of each token, from the byte length of each token id."""
    n = len(ids)
    starts = np.zeros(n, dtype=np.int64)
    if n > 1:
        np.cumsum(token_len[ids[:-1]], out=starts[1:])
    if text.isascii():
        return starts
    raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    char_of_byte = np.cumsum((raw & 0xC0) != 0x80) - 1
    return char_of_byte[np.minimum(starts, len(raw) - 1)] if n else starts


def _tiktoken_encode(enc: Any, texts: Sequence[str], threads: int) -> list[np.ndarray]:
    """Ordinary-text ids as int64 arrays.

    ``encode_ordinary`` (no special-token scan; the encoder has no special tokens anyway)
    is about 1.5× faster than the buffer-returning ``encode`` path and releases the GIL.
    Lone surrogates never reach it: ``encode`` rejects them before tokenizing.
    """
    encode_ordinary = enc.encode_ordinary

    def one(text: str) -> np.ndarray:
        return np.asarray(encode_ordinary(text), dtype=np.int64)

    total = sum(len(t) for t in texts)
    if threads > 1 and len(texts) > 1 and total > _PARALLEL_MIN_CHARS:
        # One task per thread over a contiguous share of the text (tiktoken releases the GIL);
        # a future per run would cost more than short runs take to encode.
        bounds = [0]
        share, acc = total / threads, 0
        for i, t in enumerate(texts):
            acc += len(t)
            if acc >= share * len(bounds) and len(bounds) < threads:
                bounds.append(i + 1)
        bounds.append(len(texts))

        def part(k: int) -> list[np.ndarray]:
            return [one(t) for t in texts[bounds[k] : bounds[k + 1]]]

        parts = list(_pool(threads).map(part, range(len(bounds) - 1)))
        return [ids for chunk in parts for ids in chunk]
    return [one(t) for t in texts]


#: Thread pools by size, kept for the process that made them (a forked child makes its own).
_POOLS: dict[tuple[int, int], Any] = {}


def _pool(threads: int) -> Any:
    """A ``ThreadPoolExecutor`` of ``threads`` workers, reused across calls."""
    key = (os.getpid(), threads)
    pool = _POOLS.get(key)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor

        pool = _POOLS[key] = ThreadPoolExecutor(threads, thread_name_prefix="chatfmt-encode")
    return pool


#: Below this many characters a batch is encoded on the calling thread.
_PARALLEL_MIN_CHARS = 20_000


# ---------------------------------------------------------------------- Hugging Face tokenizers
class HFTokenizer(Tokenizer):
    """A ``tokenizer.json`` (Hugging Face ``tokenizers``), with a tiktoken fast path.

    Ordinary text is encoded by a copy of the tokenizer without its added tokens, so no
    text can turn into a special token. For byte-level BPE vocabularies whose merge
    order equals id order, a ``tiktoken`` encoder with the same ranks is used
    (identical ids; verified by the test suite); ``fast=False`` disables it.
    """

    kind = "tokenizers"

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        name: str = "tokenizer.json",
        config: Mapping[str, Any] | None = None,
        fast: bool = True,
    ) -> None:
        from tokenizers import Tokenizer as _Tok

        self.name = name
        self._spec = spec
        added = spec.get("added_tokens") or []
        self.special_tokens = {a["content"]: int(a["id"]) for a in added}
        self.strip_flags = {
            a["content"]: (bool(a.get("lstrip")), bool(a.get("rstrip")))
            for a in added
            if a.get("lstrip") or a.get("rstrip")
        }
        plain = dict(spec)
        plain["added_tokens"] = []
        plain["post_processor"] = None
        plain["truncation"] = None
        plain["padding"] = None
        self._plain = _Tok.from_str(json.dumps(plain))
        rest = _without_first_prefix(plain)
        self._plain_rest = _Tok.from_str(json.dumps(rest)) if rest is not None else self._plain
        config = config or {}
        self.bos_token = _token_str(config.get("bos_token")) or _post_bos(
            spec.get("post_processor")
        )
        self.eos_token = _token_str(config.get("eos_token"))
        add_bos = config.get("add_bos_token")
        self.add_bos = (
            bool(add_bos)
            if add_bos is not None
            else _post_bos(spec.get("post_processor")) is not None
        )
        self._vocab_size = max(
            self._plain.get_vocab_size(with_added_tokens=False),
            max(self.special_tokens.values(), default=-1) + 1,
        )
        self._tk: Any = None
        self._nfc = False
        self._token_len: np.ndarray | None = None
        if fast:
            self._setup_fast(spec)

    def _setup_fast(self, spec: Mapping[str, Any]) -> None:
        model = spec.get("model") or {}
        normalizer = spec.get("normalizer")
        norm_type = None if normalizer is None else normalizer.get("type")
        if norm_type == "Sequence" and not normalizer.get("normalizers"):  # type: ignore[union-attr]
            norm_type = None
        if norm_type not in (None, "NFC"):
            return
        if model.get("type") != "BPE" or model.get("dropout") or model.get("byte_fallback"):
            return
        if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
            return
        pattern = _bytelevel.pattern_of(spec.get("pre_tokenizer"))
        if pattern is None:
            return
        ranks = _bytelevel.tiktoken_ranks(model.get("vocab") or {}, model.get("merges") or [])
        if ranks is None:
            return
        try:
            import tiktoken
        except ImportError:
            return
        try:
            self._tk = tiktoken.Encoding(
                self.name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
            )
        except Exception:  # a pattern tiktoken's regex engine rejects: stay on tokenizers
            self._tk = None
            return
        self._nfc = norm_type == "NFC"
        lens = np.zeros(max(max(ranks.values()), self._vocab_size) + 1, dtype=np.int64)
        for raw, idx in ranks.items():
            lens[idx] = len(raw)
        self._token_len = lens

    @cached_property
    def _full(self) -> Any:
        """The complete tokenizer (with added tokens), built on first use."""
        from tokenizers import Tokenizer as _Tok

        return _Tok.from_str(json.dumps(self._spec))

    @property
    def fast(self) -> bool:
        """Whether the tiktoken fast path is active."""
        return self._tk is not None

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    def encode_runs(self, texts: Sequence[str], first: Sequence[bool] | None = None) -> list[Run]:
        out: list[Run | None] = [None] * len(texts)
        slow: list[int] = []
        if self._tk is not None and self._token_len is not None:
            fast_idx = [
                i
                for i, t in enumerate(texts)
                if not self._nfc or t.isascii() or unicodedata.is_normalized("NFC", t)
            ]
            if len(fast_idx) < len(texts):
                chosen = set(fast_idx)
                slow = [i for i in range(len(texts)) if i not in chosen]
            encoded = _tiktoken_encode(self._tk, [texts[i] for i in fast_idx], self.threads)
            for i, ids in zip(fast_idx, encoded):
                out[i] = (ids, char_starts_from_bytes(texts[i], ids, self._token_len))
        else:
            slow = list(range(len(texts)))
        if slow:
            groups: dict[bool, list[int]] = {True: [], False: []}
            for i in slow:
                groups[bool(first[i]) if first is not None else True].append(i)
            for is_first, idx in groups.items():
                if not idx:
                    continue
                tok = self._plain if is_first else self._plain_rest
                for i, enc in zip(
                    idx, tok.encode_batch([texts[i] for i in idx], add_special_tokens=False)
                ):
                    ids = np.asarray(enc.ids, dtype=np.int64)
                    starts = np.asarray([o[0] for o in enc.offsets], dtype=np.int64)
                    out[i] = (ids, starts)
        return [r for r in out if r is not None]

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """The real tokenizer's ``encode`` (special-token strings become their ids)."""
        return list(self._full.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._full.decode(list(ids), skip_special_tokens=False))

    def token_id(self, token: str) -> int | None:
        found = self.special_tokens.get(token)
        if found is not None:
            return found
        got = self._full.token_to_id(token)
        return None if got is None else int(got)

    def token_text(self, token: int) -> str:
        if self._token_len is not None and self._tk is not None and token not in self._special_ids:
            try:
                return bytes(self._tk.decode_single_token_bytes(token)).decode("utf-8", "replace")
            except KeyError:
                pass
        return self.decode([token])

    @cached_property
    def _special_ids(self) -> frozenset[int]:
        return frozenset(self.special_tokens.values())

    def __getstate__(self) -> dict[str, Any]:
        return {
            "spec": self._spec,
            "name": self.name,
            "bos": self.bos_token,
            "eos": self.eos_token,
            "add_bos": self.add_bos,
            "fast": self._tk is not None,
            "threads": self.threads,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["spec"], name=state["name"], fast=state["fast"])  # type: ignore[misc]
        self.bos_token, self.eos_token, self.add_bos = state["bos"], state["eos"], state["add_bos"]
        self.threads = state["threads"]


def _token_str(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _post_bos(post: Mapping[str, Any] | None) -> str | None:
    """The special token a ``TemplateProcessing`` post-processor puts first, if any."""
    if not post:
        return None
    if post.get("type") == "Sequence":
        for p in post.get("processors") or []:
            found = _post_bos(p)
            if found:
                return found
        return None
    if post.get("type") == "TemplateProcessing":
        single = post.get("single") or []
        if single and "SpecialToken" in single[0]:
            return str(single[0]["SpecialToken"]["id"])
    return None


def _without_first_prefix(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy whose Metaspace pre-tokenizer never prepends (for runs after the first), if needed."""
    pre = spec.get("pre_tokenizer")
    if not pre:
        return None
    changed = False

    def fix(p: Mapping[str, Any]) -> dict[str, Any]:
        nonlocal changed
        q = dict(p)
        if q.get("type") == "Metaspace" and q.get("prepend_scheme") == "first":
            q["prepend_scheme"] = "never"
            changed = True
        if q.get("type") == "Sequence":
            q["pretokenizers"] = [fix(x) for x in q.get("pretokenizers") or []]
        return q

    fixed = fix(pre)
    if not changed:
        return None
    out = dict(spec)
    out["pre_tokenizer"] = fixed
    return out


# ---------------------------------------------------------------------- tiktoken
#: The cl100k-style pattern, used for plain ``.tiktoken`` files unless ``pattern=`` is given.
CL100K_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)

#: Special tokens of Mistral's tekken files that do not list their own (v3 files; in id order).
TEKKEN_V3_SPECIALS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)


class TiktokenTokenizer(Tokenizer):
    """A tiktoken BPE (``.tiktoken`` rank file, or a Mistral ``tekken.json``).

    ``offset`` shifts ordinary ids (tekken puts special tokens first).
    """

    kind = "tiktoken"

    def __init__(
        self,
        ranks: dict[bytes, int],
        pattern: str,
        special_tokens: Mapping[str, int] | None = None,
        *,
        name: str = "tiktoken",
        offset: int = 0,
        bos_token: str | None = None,
        eos_token: str | None = None,
        add_bos: bool = False,
    ) -> None:
        import tiktoken

        self.name = name
        self._state = (
            ranks,
            pattern,
            dict(special_tokens or {}),
            offset,
            bos_token,
            eos_token,
            add_bos,
        )
        self._enc = tiktoken.Encoding(
            name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
        )
        self._offset = offset
        self.special_tokens = dict(special_tokens or {})
        self.bos_token, self.eos_token, self.add_bos = bos_token, eos_token, add_bos
        size = max([*ranks.values(), -1]) + 1
        lens = np.zeros(size + offset, dtype=np.int64)
        for raw, idx in ranks.items():
            lens[idx + offset] = len(raw)
        self._token_len = lens
        self._id_to_special = {v: k for k, v in self.special_tokens.items()}
        self._vocab_size = max(size + offset, max([*self.special_tokens.values(), -1]) + 1)

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    def encode_runs(self, texts: Sequence[str], first: Sequence[bool] | None = None) -> list[Run]:
        out = []
        for text, raw_ids in zip(texts, _tiktoken_encode(self._enc, texts, self.threads)):
            ids = raw_ids + self._offset
            out.append((ids, char_starts_from_bytes(text, ids, self._token_len)))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        parts: list[bytes] = []
        for i in ids:
            special = self._id_to_special.get(int(i))
            if special is not None:
                parts.append(special.encode())
            else:
                parts.append(self._enc.decode_single_token_bytes(int(i) - self._offset))
        return b"".join(parts).decode("utf-8", "replace")

    def __getstate__(self) -> dict[str, Any]:
        return {"state": self._state, "name": self.name, "threads": self.threads}

    def __setstate__(self, state: dict[str, Any]) -> None:
        ranks, pattern, specials, offset, bos, eos, add_bos = state["state"]
        self.__init__(  # type: ignore[misc]
            ranks,
            pattern,
            specials,
            name=state["name"],
            offset=offset,
            bos_token=bos,
            eos_token=eos,
            add_bos=add_bos,
        )
        self.threads = state["threads"]


def load_tiktoken_file(
    path: Path, *, pattern: str | None = None, special_tokens: Mapping[str, int] | None = None
) -> TiktokenTokenizer:
    """A plain tiktoken rank file: one ``base64-token rank`` pair per line."""
    ranks: dict[bytes, int] = {}
    for n, line in enumerate(
        read_text(path, error=TokenizationError, encoding="ascii").splitlines(), 1
    ):
        if not line.strip():
            continue
        try:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
        except ValueError:
            raise TokenizationError(f"{path}:{n}: not a tiktoken rank line") from None
    return TiktokenTokenizer(ranks, pattern or CL100K_PATTERN, special_tokens, name=str(path))


def load_tekken(path: Path, data: Mapping[str, Any]) -> TiktokenTokenizer:
    """A Mistral ``tekken.json``: special tokens take the first ids, ordinary ranks follow."""
    config = data["config"]
    num_special = int(config.get("default_num_special_tokens", 1000))
    inner = int(config.get("default_vocab_size", num_special + len(data["vocab"]))) - num_special
    ranks = {}
    for entry in data["vocab"][:inner]:
        ranks[base64.b64decode(entry["token_bytes"])] = int(entry["rank"])
    specials_raw = data.get("special_tokens")
    if specials_raw:
        specials = {s["token_str"]: int(s["rank"]) for s in specials_raw}
    else:
        specials = {tok: i for i, tok in enumerate(TEKKEN_V3_SPECIALS)}
    return TiktokenTokenizer(
        ranks,
        config["pattern"],
        specials,
        name=str(path),
        offset=num_special,
        bos_token="<s>" if "<s>" in specials else None,
        eos_token="</s>" if "</s>" in specials else None,
        add_bos=True,
    )


# ---------------------------------------------------------------------- SentencePiece
_SP_SPECIAL_TYPES = (2, 3, 4)  # UNKNOWN, CONTROL, USER_DEFINED


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece model (``.model`` file, or built from a GGUF ``llama`` vocab).

    User-defined pieces are treated as special tokens: ordinary text is encoded by a
    copy of the model in which they are control pieces, so content never matches them.
    Each run of text is encoded on its own (with the model's dummy prefix), the way
    SentencePiece-based chat encoders (mistral-common, Llama 2) join special tokens and text.
    """

    kind = "sentencepiece"

    def __init__(
        self, model_proto: bytes, *, name: str = "sentencepiece", add_bos: bool = True
    ) -> None:
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2 as pb

        self.name = name
        self._proto = model_proto
        proto = pb.ModelProto()  # type: ignore[attr-defined]
        try:  # protobuf's DecodeError or sentencepiece's RuntimeError: not a model file
            proto.ParseFromString(model_proto)
            self._full = spm.SentencePieceProcessor(model_proto=model_proto)
        except Exception as exc:
            raise TokenizationError(f"{name}: not a SentencePiece model ({exc})") from None
        self.special_tokens = {
            p.piece: i for i, p in enumerate(proto.pieces) if p.type in _SP_SPECIAL_TYPES
        }
        for p in proto.pieces:
            if p.type == 4:
                p.type = 3
        self._plain = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
        bos, eos = self._full.bos_id(), self._full.eos_id()
        self.bos_token = self._full.id_to_piece(bos) if bos >= 0 else None
        self.eos_token = self._full.id_to_piece(eos) if eos >= 0 else None
        self.add_bos = add_bos and self.bos_token is not None
        self._id_to_special = {v: k for k, v in self.special_tokens.items()}

    @property
    def vocab_size(self) -> int:
        return int(self._full.get_piece_size())

    def encode_runs(self, texts: Sequence[str], first: Sequence[bool] | None = None) -> list[Run]:
        out = []
        for text, proto in zip(texts, self._plain.encode(list(texts), return_type="proto")):
            pieces = proto.pieces
            ids = np.fromiter((p.id for p in pieces), dtype=np.int64, count=len(pieces))
            starts = np.fromiter((p.begin for p in pieces), dtype=np.int64, count=len(pieces))
            if not text.isascii() and len(starts):
                raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
                char_of_byte = np.append(np.cumsum((raw & 0xC0) != 0x80) - 1, len(text))
                starts = char_of_byte[np.minimum(starts, len(raw))]
            out.append((ids, starts))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        # Special pieces print as their strings; the rest decodes with SentencePiece.
        parts: list[str] = []
        buf: list[int] = []
        for i in ids:
            special = self._id_to_special.get(int(i))
            if special is None:
                buf.append(int(i))
                continue
            if buf:
                parts.append(self._full.decode(buf))
                buf = []
            parts.append(special)
        if buf:
            parts.append(self._full.decode(buf))
        return "".join(parts)

    def token_text(self, token: int) -> str:
        return str(self._full.id_to_piece(int(token)))

    def token_id(self, token: str) -> int | None:
        found = self.special_tokens.get(token)
        if found is not None:
            return found
        idx = int(self._full.piece_to_id(token))
        return None if idx == self._full.unk_id() and token != self._full.id_to_piece(idx) else idx

    def __getstate__(self) -> dict[str, Any]:
        return {
            "proto": self._proto,
            "name": self.name,
            "add_bos": self.add_bos,
            "threads": self.threads,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["proto"], name=state["name"], add_bos=state["add_bos"])  # type: ignore[misc]
        self.threads = state["threads"]


# ---------------------------------------------------------------------- loading
def load_tokenizer(
    path: str | Path | Any,
    *,
    fast: bool = True,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
) -> Tokenizer:
    """Load a tokenizer from a path (or wrap a tokenizer object).

    Accepts: a Hugging Face model directory or ``tokenizer.json`` (``tokenizer_config.json``
    beside it supplies BOS/EOS), a SentencePiece ``.model`` file, a tiktoken rank file
    (``pattern``/``special_tokens`` describe it) or Mistral ``tekken.json``, a GGUF file
    (its vocab), a ``tokenizers.Tokenizer`` or a transformers fast tokenizer, or an
    existing adapter. ``fast=False`` disables the tiktoken fast path.
    """
    if isinstance(path, Tokenizer):
        return path
    if not isinstance(path, (str, Path)):
        return _wrap_object(path, fast=fast)
    p = Path(path).expanduser()
    if not p.exists():
        raise TokenizationError(f"tokenizer not found: {p}")
    try:
        stamp = p.stat().st_mtime_ns
    except OSError:
        stamp = 0
    key = (str(p.resolve()), stamp, fast, pattern, tuple(sorted((special_tokens or {}).items())))
    cached = _LOADED.get(key)
    if cached is None:
        cached = _load(p, fast=fast, pattern=pattern, special_tokens=special_tokens)
        _LOADED[key] = cached
    return cached


#: Tokenizers loaded in this process, by path, modification time and options.
_LOADED: dict[tuple[Any, ...], Tokenizer] = {}


def _load(
    p: Path, *, fast: bool, pattern: str | None, special_tokens: Mapping[str, int] | None
) -> Tokenizer:
    if p.is_dir():
        return _load_dir(p, fast=fast, pattern=pattern, special_tokens=special_tokens)
    name = p.name.lower()
    if name.endswith(".gguf"):
        from .gguf import load_gguf_tokenizer

        return load_gguf_tokenizer(p, fast=fast)
    if name.endswith(".json"):
        try:
            data = json.loads(read_text(p, error=TokenizationError))
        except ValueError as exc:
            raise TokenizationError(f"{p}: not a readable JSON tokenizer ({exc})") from None
        if isinstance(data, dict) and "model" in data:
            return HFTokenizer(data, name=str(p), config=_read_config(p.parent), fast=fast)
        if isinstance(data, dict) and "config" in data and "vocab" in data:
            return load_tekken(p, data)
        if name == "tokenizer_config.json" and (p.parent / "tokenizer.json").is_file():
            return _load_dir(p.parent, fast=fast, pattern=pattern, special_tokens=special_tokens)
        raise TokenizationError(f"{p}: JSON file is neither a tokenizer.json nor a tekken.json")
    if ".model" in name:
        return SentencePieceTokenizer(p.read_bytes(), name=str(p))
    return load_tiktoken_file(p, pattern=pattern, special_tokens=special_tokens)


def _read_config(folder: Path) -> dict[str, Any]:
    cfg = folder / "tokenizer_config.json"
    if not cfg.is_file():
        return {}
    try:
        data = json.loads(read_text(cfg, error=TokenizationError))
    except ValueError as exc:
        raise TokenizationError(f"{cfg}: cannot read ({exc})") from None
    return data if isinstance(data, dict) else {}


def _load_dir(folder: Path, **kw: Any) -> Tokenizer:
    if (folder / "tokenizer.json").is_file():
        return load_tokenizer(folder / "tokenizer.json", fast=kw["fast"])
    for candidate in ("tokenizer.model", "tekken.json"):
        if (folder / candidate).is_file():
            return load_tokenizer(folder / candidate, **kw)
    ggufs = sorted(folder.glob("*.gguf"))
    if len(ggufs) == 1:
        return load_tokenizer(ggufs[0], **kw)
    found = sorted(folder.glob("*.tiktoken"))
    if len(found) == 1:
        return load_tokenizer(found[0], **kw)
    raise TokenizationError(
        f"{folder}: no tokenizer.json, tokenizer.model, tekken.json, single .gguf or .tiktoken file"
    )


def _wrap_object(obj: Any, *, fast: bool) -> Tokenizer:
    backend = getattr(obj, "backend_tokenizer", obj)  # transformers fast tokenizers
    to_str = getattr(backend, "to_str", None)
    if to_str is None:
        raise TokenizationError(
            f"cannot use {type(obj).__name__} as a tokenizer; pass a path, a tokenizers.Tokenizer "
            "or a transformers fast tokenizer"
        )
    config: dict[str, Any] = {}
    for key in ("bos_token", "eos_token"):
        value = getattr(obj, key, None)
        if isinstance(value, str):
            config[key] = value
    if hasattr(obj, "add_bos_token"):
        config["add_bos_token"] = bool(obj.add_bos_token)
    return HFTokenizer(json.loads(to_str()), name=type(obj).__name__, config=config, fast=fast)
