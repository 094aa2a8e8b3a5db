"""Finding markers in streamed text, holding back only a suffix that may start one.

A :class:`MarkerSet` searches a buffer for the earliest of a few marker strings.
When none is found, everything except the longest suffix that is a prefix of some
marker is safe to release; that suffix (shorter than the longest marker) is held
back until the next chunk decides it. Work per call is proportional to the text
searched, so a stream is scanned in linear time.

Special markers of a :class:`MarkerSet` are checked with a ``real(marker, pos)``
callback (a parser's view of :class:`~.special.SpecialTokens`): an occurrence it
rejects is a look-alike, i.e. ordinary text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

#: ``real(marker, pos)``: whether the special marker at ``pos`` of the searched text is real.
RealCheck = Callable[[str, int], bool]


class MarkerSet:
    """A set of marker strings; ``special`` ones are subject to the token-id check."""

    __slots__ = ("_first", "_prefixes", "_regex", "markers", "maxlen", "special")

    def __init__(self, markers: Sequence[str], special: Iterable[str] = ()) -> None:
        self.markers = tuple(markers)
        self.special = frozenset(special) & frozenset(markers)
        self._regex, self._prefixes, self.maxlen = _compiled(self.markers)
        self._first = frozenset(m[0] for m in self.markers if m)

    def held_suffix(self, text: str, start: int = 0) -> int:
        """Length of the longest suffix of ``text[start:]`` that is a proper prefix of a marker."""
        n = len(text)
        longest = min(self.maxlen - 1, n - start)
        if longest <= 0 or self._first.isdisjoint(text[n - longest :]):
            return 0  # no marker starts in the tail (the usual case): one set test
        for k in range(longest, 0, -1):
            if text[n - k :] in self._prefixes:
                return k
        return 0

    def search(
        self, text: str, start: int = 0, real: RealCheck | None = None
    ) -> tuple[int, str] | None:
        """Earliest real marker in ``text[start:]`` as ``(position, marker)``, or None."""
        pos = start
        while True:
            m = self._regex.search(text, pos)
            if m is None:
                return None
            marker = m.group()
            if real is None or marker not in self.special or real(marker, m.start()):
                return m.start(), marker
            pos = m.end()  # a look-alike: ordinary text

    def split(
        self, text: str, start: int = 0, real: RealCheck | None = None
    ) -> tuple[int, str | None, int]:
        """Scan ``text[start:]``: ``(end_of_free_text, marker or None, resume_position)``.

        If a marker is found at ``p``: ``(p, marker, p + len(marker))``. Otherwise
        the free text ends where a possible marker prefix begins (held back), and
        the resume position equals that end.
        """
        found = self.search(text, start, real)
        if found is not None:
            p, marker = found
            return p, marker, p + len(marker)
        end = len(text) - self.held_suffix(text, start)
        return end, None, end


@lru_cache(maxsize=256)
def marker_set(markers: tuple[str, ...], special: frozenset[str] = frozenset()) -> MarkerSet:
    """A shared :class:`MarkerSet` (immutable; built once per markers and special set)."""
    return MarkerSet(markers, special)


@lru_cache(maxsize=256)
def _compiled(markers: tuple[str, ...]) -> tuple[re.Pattern[str], frozenset[str], int]:
    """Search regex, proper prefixes and longest length of ``markers`` (built once per set)."""
    # Longest first so that a marker that is a prefix of another loses ties.
    ordered = sorted(markers, key=len, reverse=True)
    regex = re.compile("|".join(re.escape(m) for m in ordered))
    prefixes = frozenset(m[:k] for m in markers for k in range(1, len(m)))
    return regex, prefixes, max((len(m) for m in markers), default=0)
