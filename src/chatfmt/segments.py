"""Segments: the one structure every output is built from.

A template renders a conversation into a list of :class:`Segment`. The prompt
string is their join; token ids, loss masks and injection checks are derived
from the same list (control text may hold special tokens, content never does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Kind(str, Enum):
    """What a piece of text is: template scaffolding, or data from the conversation."""

    CONTROL = "control"
    CONTENT = "content"


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of prompt text.

    ``kind``: CONTROL for template text (role headers, special tokens, separators),
    CONTENT for text taken from messages or tools (never tokenized as special tokens).
    ``message``: index of the message the text belongs to (``None`` for text that
    belongs to no message, e.g. BOS or the generation prompt).
    ``trained``: whether a fine-tuning loss is taken on it (assistant output and
    its end-of-turn marker).
    """

    text: str
    kind: Kind
    message: int | None = None
    trained: bool = False

    @property
    def is_control(self) -> bool:
        return self.kind is Kind.CONTROL

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "kind": self.kind.value,
            "message": self.message,
            "trained": self.trained,
        }


def join(segments: Iterable[Segment]) -> str:
    """The prompt string of a segment list."""
    return "".join(s.text for s in segments)


class SegmentBuilder:
    """Collects segments, dropping empty ones and merging neighbours with equal attributes."""

    __slots__ = ("_segments",)

    def __init__(self) -> None:
        self._segments: list[Segment] = []

    def add(self, text: str, kind: Kind, message: int | None = None, trained: bool = False) -> None:
        if not text:
            return
        segs = self._segments
        if segs:
            last = segs[-1]
            if last.kind is kind and last.message == message and last.trained == trained:
                segs[-1] = Segment(last.text + text, kind, message, trained)
                return
        segs.append(Segment(text, kind, message, trained))

    def control(self, text: str, message: int | None = None, trained: bool = False) -> None:
        """Template text (may contain special tokens)."""
        self.add(text, Kind.CONTROL, message, trained)

    def content(self, text: str, message: int | None = None, trained: bool = False) -> None:
        """Text from the conversation (never special tokens)."""
        self.add(text, Kind.CONTENT, message, trained)

    def extend(self, segments: Iterable[Segment]) -> None:
        for s in segments:
            self.add(s.text, s.kind, s.message, s.trained)

    @property
    def segments(self) -> list[Segment]:
        return self._segments

    def text(self) -> str:
        return join(self._segments)


def truncate_after_content(segments: Sequence[Segment], message: int) -> list[Segment]:
    """Cut everything after the last content segment of ``message``.

    Used for ``continue_final_message``: the final message is left open so the
    model continues it. If the message has no content segment, cut after its last
    segment of any kind.
    """
    cut = None
    for i in range(len(segments) - 1, -1, -1):
        if segments[i].message == message and segments[i].kind is Kind.CONTENT:
            cut = i
            break
    if cut is None:
        for i in range(len(segments) - 1, -1, -1):
            if segments[i].message == message:
                cut = i
                break
    if cut is None:
        return list(segments)
    return list(segments[: cut + 1])
