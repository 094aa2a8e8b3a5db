"""Telling real special tokens from look-alike text, from the token ids of each chunk.

A marker such as ``<tool_call>`` may reach the parser as one special token (a
real marker) or as ordinary tokens that happen to spell it (prose, e.g. a user's
question echoed by the model). Given ``feed(text, token_ids)``,
:class:`SpecialTokens` decides, for every occurrence of a marker whose id is
known, whether it is real, by its absolute character position in the stream;
the parsers ask :meth:`SpecialTokens.is_real` for the occurrences they reach.

The rule (also in ``docs/parsing.md``): a special id belongs to a marker
occurrence whose text overlaps the chunk that carries the id — normally the
whole marker is in that chunk; a marker cut across chunks may have its id in
the chunk where its text begins or where it completes. Per chunk and marker
string, with ``m`` ids and ``n`` occurrences completing in the chunk: ``m == 0``
→ all look-alikes; ``m >= n`` → all real (a spare id may belong to a marker cut
at the chunk's end); ``0 < m < n`` → located by decoding the chunk's ids with
the tokenizer, else :class:`~chatfmt.errors.ParseError`. With a tokenizer, a
chunk that ends with the start of a marker it has an id for is located too. Only
these chunks are decoded. A chunk fed without ids decides by text alone, as a
stream without ids does.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ParseError

#: Ids of the previous chunk kept as decoding context (leading spaces, UTF-8 tails).
_CONTEXT = 4


class SpecialTokens:
    """Which marker occurrences of the stream are real special tokens (see module doc).

    ``marker_ids`` maps marker strings to their token ids; ``tokenizer`` (any object
    with ``decode``) is used only to locate ids in a chunk that has both real and
    look-alike occurrences of one marker. Inactive (every textual marker counts)
    until a chunk comes with token ids.
    """

    __slots__ = (
        "_ctx",
        "_decode",
        "_end",
        "_from",
        "_keep",
        "_marker_of",
        "_order",
        "_pending",
        "_real",
        "_regex",
        "_strings",
        "_tail",
        "_tokenizer",
        "active",
    )

    def __init__(self, marker_ids: Mapping[str, int] | None = None, tokenizer: Any = None) -> None:
        self._marker_of: dict[int, str] = {v: k for k, v in (marker_ids or {}).items()}
        strings = sorted(set(self._marker_of.values()), key=len, reverse=True)
        self._strings = frozenset(strings)
        self._regex = re.compile("|".join(map(re.escape, strings))) if strings else None
        self._keep = max((len(s) for s in strings), default=1) - 1
        self._tokenizer = tokenizer
        self._decode: Any = None
        self.active = False
        self._from = 0  # stream offset where token ids began
        self._end = 0  # length of the text fed so far
        self._tail = ""  # its last ``_keep`` characters
        self._ctx: list[int] = []
        self._pending: list[tuple[str, int]] = []  # (marker, end of the chunk that carried its id)
        self._real: dict[int, str] = {}  # stream offset -> real marker starting there
        self._order: deque[int] = deque()

    @property
    def known(self) -> bool:
        """Whether any marker ids are known (else token ids are ignored)."""
        return self._regex is not None

    # ------------------------------------------------------------------ queries
    def is_real(self, marker: str, pos: int) -> bool:
        """Whether the occurrence of ``marker`` at stream offset ``pos`` is a real special token."""
        if not self.active or pos + len(marker) <= self._from:
            return True
        if marker not in self._strings:
            return True
        return self._real.get(pos) == marker

    def prune(self, low: int) -> None:
        """Forget decisions before stream offset ``low`` (no parser will ask for them)."""
        order, real = self._order, self._real
        while order and order[0] < low:
            real.pop(order.popleft(), None)

    # ------------------------------------------------------------------ feeding
    def feed(self, text: str, token_ids: Sequence[int] | None) -> None:
        """Record the chunk ``text`` (and its ``token_ids``) before the parsers see it."""
        if self._regex is None:
            return
        start = self._end
        if token_ids is None:
            if self.active:
                self._mark_all(text, start)
        else:
            if not self.active:
                self.active, self._from = True, start
            specials = [(j, m) for j, t in enumerate(token_ids) if (m := self._marker_of.get(t))]
            if specials or self._pending:
                self._resolve(text, start, token_ids, specials)
            if self._tokenizer is not None:
                self._ctx = (self._ctx + list(token_ids[-_CONTEXT:]))[-_CONTEXT:]
        self._end = start + len(text)
        if self._keep:
            self._tail = text[-self._keep :] if len(text) >= self._keep else self._tail + text
            self._tail = self._tail[-self._keep :]

    def _occurrences(self, text: str, start: int) -> dict[str, list[int]]:
        """Stream offsets of the marker occurrences that complete in this chunk, per marker."""
        assert self._regex is not None
        window = self._tail + text
        base = start - len(self._tail)
        found: dict[str, list[int]] = {}
        for m in self._regex.finditer(window):
            if base + m.end() > start:
                found.setdefault(m.group(), []).append(base + m.start())
        return found

    def _add(self, pos: int, marker: str) -> None:
        if pos not in self._real:
            self._order.append(pos)
        self._real[pos] = marker

    def _mark_all(self, text: str, start: int) -> None:
        """A chunk without ids: its markers count by text alone."""
        self._pending = []
        for marker, positions in self._occurrences(text, start).items():
            for pos in positions:
                self._add(pos, marker)

    def _cut_at_end(self, marker: str, text: str) -> bool:
        """Whether the text so far ends with a proper prefix of ``marker`` (a marker cut there)."""
        window = (self._tail + text)[-(len(marker) - 1) :] if len(marker) > 1 else ""
        return any(marker.startswith(window[k:]) for k in range(len(window)))

    def _resolve(
        self, text: str, start: int, ids: Sequence[int], specials: list[tuple[int, str]]
    ) -> None:
        end = start + len(text)
        occ = self._occurrences(text, start)
        new: dict[str, int] = {}
        for _, marker in specials:
            new[marker] = new.get(marker, 0) + 1
        real: list[tuple[int, str]] = []
        pending: list[tuple[str, int]] = []
        mixed: list[str] = []
        carried = {marker: bound for marker, bound in self._pending}
        for marker in {**carried, **new}:
            found = occ.get(marker, [])
            bound = carried.get(marker)
            if bound is not None:
                if found and found[0] < bound:  # the cut marker whose id came before
                    real.append((found[0], marker))
                    found = occ[marker] = found[1:]
                elif end - bound < len(marker) - 1:  # still being completed
                    pending.append((marker, bound))
            m = new.get(marker, 0)
            if not m:
                continue
            cut = self._cut_at_end(marker, text)
            if m < len(found) or (cut and found and self._tokenizer is not None):
                mixed.append(marker)  # which occurrences are real depends on positions
            else:
                real.extend((pos, marker) for pos in found)
                if m > len(found) and cut:
                    pending.append((marker, end))
        if mixed:
            if self._tokenizer is None:
                counts = ", ".join(
                    f"{len(occ[mk])} occurrences of {mk!r} but {new[mk]} special id(s)"
                    for mk in mixed
                )
                raise ParseError(
                    f"chunk at offset {start} has both real and look-alike markers ({counts}); "
                    "pass tokenizer= to locate the special tokens, or feed smaller chunks"
                )
            placed, cuts = self._locate(text, start, ids, specials, occ)
            real.extend((pos, mk) for pos, mk in placed if mk in mixed)
            pending.extend(item for item in cuts if item[0] in mixed)
        for pos, marker in sorted(real):
            self._add(pos, marker)
        self._pending = pending

    # ------------------------------------------------------------------ locating (tokenizer)
    def _text_of(self, ids: Sequence[int]) -> str:
        tok = self._tokenizer
        if self._decode is None:
            for kwargs in (
                {"skip_special_tokens": False, "clean_up_tokenization_spaces": False},
                {"skip_special_tokens": False},
                {},
            ):
                try:
                    text = tok.decode(list(ids), **kwargs)
                except TypeError:
                    continue
                self._decode = kwargs
                return str(text)
            raise ParseError("tokenizer= has no usable decode()")
        return str(tok.decode(list(ids), **self._decode))

    def _locate(
        self,
        text: str,
        start: int,
        ids: Sequence[int],
        specials: list[tuple[int, str]],
        occ: Mapping[str, list[int]],
    ) -> tuple[list[tuple[int, str]], list[tuple[str, int]]]:
        """Where the chunk's special tokens are, from decoding its ids.

        Returns the real occurrences and the markers cut at the chunk's end. The
        text between two special tokens is decoded after the first of them (so a
        decoder's start-of-text rules do not apply); before the first one, after
        a few ids of the previous chunk. A special token must be within half its
        length of where the decoded text puts it (engines' detokenizers differ
        slightly, e.g. in when they release an incomplete character).
        """
        end = start + len(text)
        placed: list[tuple[int, str]] = []
        cuts: list[tuple[str, int]] = []
        cursor, prev = start, -1
        for j, marker in specials:
            if prev < 0:  # after a few ids of the previous chunk
                ctx = self._ctx
                gap = len(self._text_of([*ctx, *ids[:j]])) - (len(self._text_of(ctx)) if ctx else 0)
            else:  # after the previous special token
                gap = len(self._text_of(ids[prev:j])) - len(self._text_of(ids[prev : prev + 1]))
            expected = cursor + gap
            tol = (len(marker) - 1) // 2
            found = occ.get(marker, [])
            k = bisect_left(found, expected - tol)
            hit = found[k] if k < len(found) and found[k] <= expected + tol else None
            if hit is None and j == 0 and found and found[0] < start:
                hit = found[0]  # a cut marker whose text began in the previous chunk
            if hit is not None:
                placed.append((hit, marker))
                cursor = hit + len(marker)
            elif expected >= end - len(marker) + 1 - tol and self._cut_at_end(marker, text):
                cuts.append((marker, end))
                cursor = end
            else:
                raise ParseError(
                    f"the token ids of the chunk at offset {start} do not fit its text: "
                    f"no {marker!r} near offset {expected} (ids and text must belong together)"
                )
            prev = j
        return placed, cuts
