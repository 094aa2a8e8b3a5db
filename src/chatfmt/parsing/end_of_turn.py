"""The end of the assistant turn: a layer in front of the family parser.

A model's turn ends at one of its template's end-of-turn markers
(``generation_config.stop_words``, e.g. ``<|im_end|>``), followed by the
whitespace the template writes after it (``after``, e.g. ``"\\n"``). Engines
return the marker or not depending on their settings, so both parse alike: the
marker is never content, and whatever the model wrote after it (a hallucinated
next turn) is kept apart as :attr:`EndOfTurn.trailing_text` — never content,
never dropped.

Text before the marker passes through unchanged (same stream offsets, so the
family parser's special-token checks are unaffected); only a suffix that may be
the start of a marker is held back until the next chunk decides it, so work per
chunk is proportional to the chunk. With token ids and a known marker id, a
marker spelled by ordinary tokens is text (:mod:`.special`).
"""

from __future__ import annotations

from .markers import MarkerSet, RealCheck
from .special import SpecialTokens


def _shifted(budget: SpecialTokens, base: int) -> RealCheck:
    """``budget.is_real`` for positions counted from stream offset ``base``."""
    return lambda marker, pos: budget.is_real(marker, base + pos)


class EndOfTurn:
    """Splits a stream at its first end-of-turn marker (see module doc)."""

    __slots__ = ("_after", "_budget", "_first", "_held", "_markers", "_offset", "_trailing", "seen")

    def __init__(self, markers: MarkerSet | None, after: str, budget: SpecialTokens) -> None:
        self._markers = markers
        self._first = (
            frozenset(m[0] for m in markers.markers) if markers is not None else frozenset()
        )
        self._after = after
        self._budget = budget
        self._held = ""  # undecided text: a possible start of a marker
        self._offset = 0  # stream offset of ``_held``
        self._trailing: list[str] = []
        #: Whether an end-of-turn marker was seen.
        self.seen = False

    def feed(self, text: str) -> str:
        """Take the next chunk; return the part of it (and of held text) that belongs to the turn."""
        if self.seen:
            self._trailing.append(text)
            return ""
        markers = self._markers
        if markers is None:
            return text
        buf = self._held + text if self._held else text
        base = self._offset
        if self._first.isdisjoint(buf):  # no marker can start here: all of it is the turn's
            self._held = ""
            self._offset = base + len(buf)
            return buf
        budget = self._budget
        found = markers.search(buf, 0, budget.is_real if not base else _shifted(budget, base))
        if found is not None:
            at, marker = found
            self.seen = True
            self._held = ""
            self._trailing.append(buf[at + len(marker) :])
            return buf[:at]
        end = len(buf) - markers.held_suffix(buf)
        self._held = buf[end:]
        self._offset = base + end
        return buf[:end]

    def finish(self) -> str:
        """End of stream: the held-back text (a marker that never completed) belongs to the turn."""
        held, self._held = self._held, ""
        return held

    def low_water(self) -> int:
        """The lowest stream offset this layer may still ask about."""
        return self._offset

    @property
    def trailing_text(self) -> str:
        """Text after the marker, without the whitespace the template writes there (the whole
        whitespace run: templates differ in the blank lines they write after a turn)."""
        text = "".join(self._trailing)
        after = self._after
        if after and text.startswith(after):
            return text[len(after) :].lstrip(" \t\r\n")
        if after.startswith(text):
            return ""
        return text
