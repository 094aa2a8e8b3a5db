"""``encode``: messages → token ids, labels and attention mask, derived from segments.

Design: the template's segments are cut into *runs* at every special-token string inside
CONTROL segments. A run is the maximal text between two such tokens (content and
plain control text together), encoded in one batched call as ordinary text, so BPE
merges across segment borders happen exactly as when the whole prompt is tokenized.
Special tokens get their ids directly. Each token is then mapped back to segments by
character offsets.

Boundary rule: a token belongs to the segment where it starts (for ``message`` and
``kind``); it is *trained* when any of its characters lies in a trained segment, so
no trained character is ever left out of the loss.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import ChatFmtError, TokenizationError
from ..requests import DEFAULT_ENCODE, RenderRequest
from ..segments import Kind, Segment, join
from ..template import Template
from .control import fit, mismatch_error, pattern_of, split_control
from .tokenizer import Tokenizer, load_tokenizer

TrainOn = Literal["all_assistant", "last_assistant", "all", "none"]
Truncation = Literal["error", "right", "left"]
OnSpecial = Literal["text", "raise"]
OnMismatch = Literal["raise", "text"]

IGNORE_INDEX = -100
#: The accepted ``train_on`` values.
TRAIN_ON: tuple[str, ...] = ("all_assistant", "last_assistant", "all", "none")


class SequenceTooLongError(TokenizationError):
    """A sequence longer than ``max_length`` under ``truncation="error"``."""

    def __init__(self, length: int, max_length: int) -> None:
        self.length = length
        self.max_length = max_length
        super().__init__(
            f"sequence has {length} tokens, more than max_length={max_length} "
            "(pass truncation='right' or 'left' to cut it)"
        )


@dataclass
class Encoding:
    """Token ids with labels (``-100`` where no loss is taken) and attention mask.

    ``token_messages`` holds the message index of each token (``-1`` for none) and
    ``token_kinds`` ``"control"``/``"content"``; ``truncated_from`` the length before
    truncation (``None`` if not truncated).
    """

    ids: np.ndarray
    label_array: np.ndarray
    message_array: np.ndarray
    control_array: np.ndarray
    text: str
    segments: list[Segment]
    tokenizer: Tokenizer = field(repr=False)
    truncated_from: int | None = None

    @property
    def input_ids(self) -> list[int]:
        return list(self.ids.tolist())

    @property
    def labels(self) -> list[int]:
        return list(self.label_array.tolist())

    @property
    def attention_mask(self) -> list[int]:
        return [1] * len(self.ids)

    @property
    def token_messages(self) -> list[int]:
        return list(self.message_array.tolist())

    @property
    def token_kinds(self) -> list[str]:
        return ["control" if c else "content" for c in self.control_array.tolist()]

    @property
    def num_trained(self) -> int:
        return int(np.count_nonzero(self.label_array != IGNORE_INDEX))

    def __len__(self) -> int:
        return len(self.ids)

    def to_dict(self) -> dict[str, list[int]]:
        """``input_ids``, ``labels``, ``attention_mask`` as lists (what trainers take)."""
        return {
            "input_ids": self.input_ids,
            "labels": self.labels,
            "attention_mask": self.attention_mask,
        }

    def to_table(self) -> list[dict[str, Any]]:
        """One row per token: position, id, decoded text, trained, message, kind."""
        tok = self.tokenizer
        return [
            {
                "pos": i,
                "id": int(t),
                "text": tok.token_text(int(t)),
                "trained": bool(lab != IGNORE_INDEX),
                "message": None if msg < 0 else int(msg),
                "kind": "control" if ctl else "content",
            }
            for i, (t, lab, msg, ctl) in enumerate(
                zip(
                    self.ids.tolist(),
                    self.label_array.tolist(),
                    self.message_array.tolist(),
                    self.control_array.tolist(),
                )
            )
        ]

    def explain(self, max_rows: int | None = None) -> str:
        """A text table of the tokens beside the mask (``T`` = trained, ``.`` = not)."""
        rows = self.to_table()
        shown = rows if max_rows is None else rows[:max_rows]
        lines = [f"{'pos':>5} {'id':>7}  loss  {'msg':>3}  {'kind':<7}  token"]
        for r in shown:
            msg = "" if r["message"] is None else str(r["message"])
            lines.append(
                f"{r['pos']:>5} {r['id']:>7}  {'T' if r['trained'] else '.':^4}  {msg:>3}  {r['kind']:<7}  {r['text']!r}"
            )
        if len(shown) < len(rows):
            lines.append(f"... {len(rows) - len(shown)} more tokens")
        lines.append(f"{len(rows)} tokens, {self.num_trained} trained")
        return "\n".join(lines)


# ---------------------------------------------------------------------- public API
def encode(
    messages: Any,
    template: str | Template,
    tokenizer: Any,
    *,
    request: RenderRequest | None = None,
    train_on: TrainOn | str | None = None,
    max_length: int | None = None,
    truncation: Truncation | str = "error",
    on_special: OnSpecial | str = "text",
    on_mismatch: OnMismatch | str = "raise",
    add_bos: bool | None = None,
    **kwargs: Any,
) -> Encoding:
    """Render ``messages`` with ``template`` and tokenize to ids, labels and mask.

    The render: ``request`` (a :class:`~chatfmt.RenderRequest`) or its fields as
    keywords (``tools``, ``add_generation_prompt`` — here ``False`` unless given —,
    ``continue_final_message``, ``sequence_start``, ``now``); any other keyword is a
    template option (e.g. ``enable_thinking``).
    ``train_on``: ``all_assistant`` (every assistant output and its end-of-turn token),
    ``last_assistant`` (only the last assistant message), ``all`` (every token), or
    ``none`` (nothing trained). Passing ``all_assistant`` or ``last_assistant`` asks for a
    training mask: a sequence with nothing trained then raises :class:`TokenizationError`.
    The default (``None``) never raises for that: an inference prompt
    (``add_generation_prompt=True``) trains nothing, anything else is masked as under
    ``all_assistant``.
    ``max_length`` (a positive int; anything else raises :class:`TokenizationError`) with
    ``truncation``: ``error`` (default), ``right`` (keep the start) or ``left`` (keep the
    end); never silent.
    ``on_special``: ``text`` encodes special-token strings in content as plain text;
    ``raise`` raises :class:`TokenizationError` naming the message.
    ``on_mismatch``: ``raise`` (default) raises :class:`TokenizationError` naming the token
    when a control token the template writes is not one special id of ``tokenizer`` (a
    tokenizer of another model); ``text`` encodes such tokens as ordinary text.
    ``add_bos``: ``None`` adds the tokenizer's BOS when the model adds it and the
    template did not render it.
    """
    (result,) = encode_batch(
        [{"messages": messages}],
        template,
        tokenizer,
        request=RenderRequest.from_kwargs(kwargs, request or DEFAULT_ENCODE),
        train_on=train_on,
        max_length=max_length,
        truncation=truncation,
        on_special=on_special,
        on_mismatch=on_mismatch,
        add_bos=add_bos,
    )
    assert isinstance(result, Encoding)
    return result


def encode_batch(
    conversations: Iterable[Any],
    template: str | Template,
    tokenizer: Any,
    *,
    request: RenderRequest | None = None,
    train_on: TrainOn | str | None = None,
    max_length: int | None = None,
    truncation: Truncation | str = "error",
    on_special: OnSpecial | str = "text",
    on_mismatch: OnMismatch | str = "raise",
    add_bos: bool | None = None,
    errors: Literal["raise", "return"] = "raise",
    **kwargs: Any,
) -> list[Encoding | ChatFmtError]:
    """Encode many conversations with one batched tokenizer call.

    Each item is a list of messages or ``{"messages": [...], "tools": [...]}`` (its
    tools replace the request's). With ``errors="return"`` a failing item yields its
    :class:`ChatFmtError` in place. The render request and the other options are
    those of :func:`encode`.
    """
    from ..api import get_template

    if train_on is not None and train_on not in TRAIN_ON:
        raise TokenizationError(f"train_on must be one of {', '.join(TRAIN_ON)}, got {train_on!r}")
    # Only an explicit training mask makes "nothing to train on" an error.
    require_trained = train_on in ("all_assistant", "last_assistant")
    req = RenderRequest.from_kwargs(kwargs, request or DEFAULT_ENCODE)
    if train_on is None:
        train_on = "none" if req.add_generation_prompt else "all_assistant"
    if truncation not in ("error", "right", "left"):
        raise TokenizationError(f"truncation must be error, right or left, got {truncation!r}")
    if on_special not in ("text", "raise"):
        raise TokenizationError(f"on_special must be text or raise, got {on_special!r}")
    if on_mismatch not in ("raise", "text"):
        raise TokenizationError(f"on_mismatch must be raise or text, got {on_mismatch!r}")
    _check_max_length(max_length)
    tpl = get_template(template)
    tok = load_tokenizer(tokenizer)
    checker = _special_checker(tok, tpl) if on_special == "raise" else None
    missing: re.Pattern[str] | None = None
    if on_mismatch == "raise":
        pair = fit(tpl, tok)  # cached per (template, tokenizer)
        if pair.written:  # the pair is wrong for every conversation: not a per-item error
            raise mismatch_error(tpl, tok, pair.written[0])
        missing = pair.pattern  # tokens only some conversations make the template write
    results: list[Encoding | ChatFmtError | None] = []
    plans: list[_Plan | None] = []
    plan: _Plan | None
    texts: list[str] = []
    firsts: list[bool] = []
    for item in conversations:
        try:
            messages, tools = _unpack(item)
            segs = tpl.segments(
                messages, request=req if tools is None else req._trusted(tools=tools)
            )
            if missing is not None:
                _require_special(segs, missing, tpl, tok)
            plan = _plan(segs, tok, add_bos=add_bos, checker=checker, texts=texts, firsts=firsts)
        except ChatFmtError as exc:
            if errors == "raise":
                raise
            results.append(exc)
            plans.append(None)
            continue
        results.append(None)
        plans.append(plan)
    encoded = tok.encode_runs(texts, firsts) if texts else []
    out: list[Encoding | ChatFmtError] = []
    for res, plan in zip(results, plans):
        if plan is None:
            assert res is not None
            out.append(res)
            continue
        try:
            out.append(
                _assemble(plan, encoded, tok, train_on, max_length, truncation, require_trained)
            )
        except ChatFmtError as exc:
            if errors == "raise":
                raise
            out.append(exc)
    return out


def encode_segments(
    segments: Sequence[Segment],
    tokenizer: Any,
    *,
    train_on: TrainOn | str = "all_assistant",
    add_bos: bool | None = False,
) -> Encoding:
    """Tokenize segments rendered elsewhere (e.g. by an untrusted template in a sandbox).

    The same encoding as :func:`encode` (control ids only from CONTROL segments, labels from
    ``trained``) without rendering and without the template/tokenizer check.
    """
    if train_on not in TRAIN_ON:
        raise TokenizationError(f"train_on must be one of {', '.join(TRAIN_ON)}, got {train_on!r}")
    tok = load_tokenizer(tokenizer)
    texts: list[str] = []
    firsts: list[bool] = []
    plan = _plan(list(segments), tok, add_bos=add_bos, checker=None, texts=texts, firsts=firsts)
    encoded = tok.encode_runs(texts, firsts) if texts else []
    return _assemble(plan, encoded, tok, train_on, None, "error", False)


# ---------------------------------------------------------------------- internals
@dataclass
class _Plan:
    segments: list[Segment]
    text: str
    #: (run index, char start) for runs, (-1 - special id, char start) for special tokens.
    steps: list[tuple[int, int]]


def _unpack(item: Any) -> tuple[Any, Any]:
    if isinstance(item, Mapping):
        if "messages" not in item:
            raise TokenizationError("a conversation item needs a 'messages' list")
        return item["messages"], item.get("tools")
    return item, None


def _check_max_length(max_length: Any) -> None:
    """``max_length`` is ``None`` or a positive int (never a bool, str or float)."""
    if max_length is None:
        return
    if isinstance(max_length, bool) or not isinstance(max_length, int):
        raise TokenizationError(
            f"max_length must be a positive int or None, got {type(max_length).__name__} "
            f"{max_length!r}"
        )
    if max_length <= 0:
        raise TokenizationError(f"max_length must be a positive int, got {max_length}")


def _special_checker(tok: Tokenizer, tpl: Template) -> re.Pattern[str] | None:
    """The pattern of special-token strings content may not hold (``on_special="raise"``)."""
    strings = frozenset(s for s in (*tok.special_tokens, *tpl.control_tokens) if s)
    return pattern_of(strings)


def _plan(
    segs: list[Segment],
    tok: Tokenizer,
    *,
    add_bos: bool | None,
    checker: re.Pattern[str] | None,
    texts: list[str],
    firsts: list[bool],
) -> _Plan:
    text = join(segs)
    bos = tok.bos_token
    want_bos = add_bos if add_bos is not None else tok.add_bos
    if want_bos and bos and not text.startswith(bos):
        segs = [Segment(bos, Kind.CONTROL, None, False), *segs]
        text = bos + text
    if checker is not None:
        for s in segs:
            if s.kind is Kind.CONTENT:
                m = checker.search(s.text)
                if m:
                    where = f"messages[{s.message}]" if s.message is not None else "tools"
                    raise TokenizationError(
                        f"{where}: content contains the special-token string {m.group()!r} "
                        "(on_special='raise'; use on_special='text' to encode it as plain text)"
                    )
    for s in segs:
        if s.kind is Kind.CONTENT and not s.text.isascii():
            _require_unicode(s)
    steps: list[tuple[int, int]] = []
    run: list[str] = []
    run_start = 0
    pos = 0

    def flush() -> None:
        if run:
            steps.append((len(texts), run_start))
            texts.append("".join(run))
            firsts.append(run_start == 0)
            run.clear()

    for s in segs:
        if s.kind is Kind.CONTROL:
            for special, a, b in split_control(tok, s.text):
                if special >= 0:
                    flush()
                    steps.append((-1 - special, pos + a))
                else:
                    if not run:
                        run_start = pos + a
                    run.append(s.text[a:b] if (a, b) != (0, len(s.text)) else s.text)
        elif s.text:
            if not run:
                run_start = pos
            run.append(s.text)
        pos += len(s.text)
    flush()
    return _Plan(segs, text, steps)


def _require_special(
    segs: list[Segment], missing: re.Pattern[str], tpl: Template, tok: Tokenizer
) -> None:
    """A control token the tokenizer has no special id for, in control text, is an error."""
    for s in segs:
        if s.kind is Kind.CONTROL:
            m = missing.search(s.text)
            if m:
                raise mismatch_error(tpl, tok, m.group())


def _require_unicode(seg: Segment) -> None:
    """Text with a lone surrogate has no UTF-8 form and so no token ids: say where it is."""
    try:
        seg.text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = f"messages[{seg.message}]" if seg.message is not None else "tools"
        raise TokenizationError(
            f"{where}: contains a lone surrogate {seg.text[exc.start]!r} (not valid Unicode "
            "text, so it has no UTF-8 bytes to tokenize)"
        ) from None


_ZERO = np.zeros(1, dtype=np.int64)


@functools.lru_cache(maxsize=4096)
def _one(token: int) -> np.ndarray:
    """A cached one-element id array (special tokens recur in every conversation)."""
    arr = np.array([token], dtype=np.int64)
    arr.flags.writeable = False
    return arr


def _assemble(
    plan: _Plan,
    encoded: list[tuple[np.ndarray, np.ndarray]],
    tok: Tokenizer,
    train_on: str,
    max_length: int | None,
    truncation: str,
    require_trained: bool,
) -> Encoding:
    # Gather every step's ids and run-local starts, then shift all starts in one vector op.
    id_parts: list[np.ndarray] = []
    start_parts: list[np.ndarray] = []
    offsets: list[int] = []
    counts: list[int] = []
    for ref, start in plan.steps:
        if ref >= 0:
            ids, starts = encoded[ref]
            id_parts.append(ids)
            start_parts.append(starts)
            counts.append(len(ids))
        else:
            id_parts.append(_one(-1 - ref))
            start_parts.append(_ZERO)
            counts.append(1)
        offsets.append(start)
    if id_parts:
        ids = np.concatenate(id_parts)
        starts = np.concatenate(start_parts) + np.repeat(
            np.asarray(offsets, dtype=np.int64), counts
        )
    else:
        ids = starts = np.zeros(0, dtype=np.int64)
    segs = plan.segments
    seg_start = np.zeros(len(segs), dtype=np.int64)
    if len(segs) > 1:
        np.cumsum([len(s.text) for s in segs[:-1]], out=seg_start[1:])
    trained = _trained_segments(segs, train_on)
    if len(ids):
        ends = np.append(starts[1:], len(plan.text))
        first = np.searchsorted(seg_start, starts, side="right") - 1
        last = np.maximum(
            np.searchsorted(seg_start, np.maximum(ends - 1, starts), side="right") - 1, first
        )
        cum = np.concatenate([[0], np.cumsum(trained)])
        tok_trained = (cum[last + 1] - cum[first]) > 0
        seg_msg = np.array([-1 if s.message is None else s.message for s in segs], dtype=np.int64)
        seg_ctl = np.array([s.kind is Kind.CONTROL for s in segs], dtype=bool)
        messages = seg_msg[first]
        control = seg_ctl[first]
    else:
        tok_trained = np.zeros(0, dtype=bool)
        messages = np.zeros(0, dtype=np.int64)
        control = np.zeros(0, dtype=bool)
    labels = np.where(tok_trained, ids, IGNORE_INDEX)
    truncated_from = None
    if max_length is not None and len(ids) > max_length:
        if truncation == "error":
            raise SequenceTooLongError(len(ids), max_length)
        truncated_from = len(ids)
        cut = (
            slice(0, max_length)
            if truncation == "right"
            else slice(len(ids) - max_length, len(ids))
        )
        ids, labels, messages, control = ids[cut], labels[cut], messages[cut], control[cut]
    if require_trained and not np.any(labels != IGNORE_INDEX):
        why = " after truncation" if truncated_from is not None else ""
        raise TokenizationError(
            f"nothing to train on{why}: no assistant output in the sequence (train_on={train_on!r} "
            "asks for a training mask; leave train_on unset or pass 'none' for inference prompts)"
        )
    return Encoding(ids, labels, messages, control, plan.text, segs, tok, truncated_from)


def _trained_segments(segs: list[Segment], train_on: str) -> np.ndarray:
    if train_on == "all":
        return np.ones(len(segs), dtype=np.int64)
    if train_on == "none":
        return np.zeros(len(segs), dtype=np.int64)
    flags = [s.trained for s in segs]
    if train_on == "last_assistant":
        last = max((s.message for s in segs if s.trained and s.message is not None), default=None)
        flags = [s.trained and s.message == last for s in segs]
    return np.asarray(flags, dtype=np.int64)
