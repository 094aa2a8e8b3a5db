"""Finding markers in streamed text, holding back only a suffix that may start one.

A :class:`MarkerSet` searches a buffer for the earliest of a few marker strings.
When none is found, everything except the longest suffix that is a prefix of some
marker is safe to release; that suffix (shorter than the longest marker) is held
back until the next chunk decides it. Work per call is proportional to the text
searched, so a stream is scanned in linear time.

With token ids, :class:`SpecialBudget` tells real special tokens from look-alike
text: a marker occurrence counts only if the chunk's token ids contained its id.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence


class SpecialBudget:
    """Real special tokens seen in token ids and not yet matched against text.

    ``active`` is False when no token ids were given (or no ids are known for the
    markers): then every textual marker is real. Occurrences are matched in
    stream order; an occurrence of a special marker with no unmatched id is a
    look-alike (ordinary text).
    """

    __slots__ = ("_counts", "_ids", "active")

    def __init__(self, marker_ids: Mapping[str, int] | None = None) -> None:
        self._ids: dict[int, str] = {v: k for k, v in (marker_ids or {}).items()}
        self._counts: Counter[str] = Counter()
        self.active = False

    @property
    def known(self) -> bool:
        return bool(self._ids)

    def add_ids(self, token_ids: Iterable[int]) -> None:
        """Record the special tokens among the ids of the chunk being fed."""
        if not self._ids:
            return
        self.active = True
        for tid in token_ids:
            marker = self._ids.get(tid)
            if marker is not None:
                self._counts[marker] += 1

    def take(self, marker: str) -> bool:
        """Whether this occurrence of ``marker`` is a real special token (and consume it)."""
        if not self.active or marker not in self._ids.values():
            return True
        if self._counts[marker] > 0:
            self._counts[marker] -= 1
            return True
        return False


class MarkerSet:
    """A set of marker strings; ``special`` ones are subject to the token-id check."""

    __slots__ = ("_prefixes", "_regex", "markers", "maxlen", "special")

    def __init__(self, markers: Sequence[str], special: Iterable[str] = ()) -> None:
        self.markers = tuple(markers)
        self.special = frozenset(special) & frozenset(markers)
        # Longest first so that a marker that is a prefix of another loses ties.
        ordered = sorted(self.markers, key=len, reverse=True)
        self._regex = re.compile("|".join(re.escape(m) for m in ordered))
        self._prefixes = frozenset(m[:k] for m in self.markers for k in range(1, len(m)))
        self.maxlen = max((len(m) for m in self.markers), default=0)

    def held_suffix(self, text: str, start: int = 0) -> int:
        """Length of the longest suffix of ``text[start:]`` that is a proper prefix of a marker."""
        n = len(text)
        for k in range(min(self.maxlen - 1, n - start), 0, -1):
            if text[n - k :] in self._prefixes:
                return k
        return 0

    def search(
        self, text: str, start: int = 0, budget: SpecialBudget | None = None
    ) -> tuple[int, str] | None:
        """Earliest real marker in ``text[start:]`` as ``(position, marker)``, or None."""
        pos = start
        while True:
            m = self._regex.search(text, pos)
            if m is None:
                return None
            marker = m.group()
            if budget is None or marker not in self.special or budget.take(marker):
                return m.start(), marker
            pos = m.end()  # a look-alike: ordinary text

    def split(
        self, text: str, start: int = 0, budget: SpecialBudget | None = None
    ) -> tuple[int, str | None, int]:
        """Scan ``text[start:]``: ``(end_of_free_text, marker or None, resume_position)``.

        If a marker is found at ``p``: ``(p, marker, p + len(marker))``. Otherwise
        the free text ends where a possible marker prefix begins (held back), and
        the resume position equals that end.
        """
        found = self.search(text, start, budget)
        if found is not None:
            p, marker = found
            return p, marker, p + len(marker)
        end = len(text) - self.held_suffix(text, start)
        return end, None, end
