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


@dataclass(slots=True)
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


_CONTROL = Kind.CONTROL


def join(segments: Iterable[Segment]) -> str:
    """The prompt string of a segment list."""
    if type(segments) is list and len(segments) == 1:
        return segments[0].text  # a text-only render: one segment holding the whole prompt
    return "".join([s.text for s in segments])


class SegmentBuilder:
    """Collects segments, dropping empty ones and merging neighbours with equal attributes.

    Pieces are buffered and merged once, when :attr:`segments` is read, so ``add`` costs a
    tuple comparison and an append. Templates get theirs from ``RenderContext.builder``,
    which is :class:`TextSink` when only the prompt string is wanted.
    """

    __slots__ = ("_attrs", "_done", "_texts")

    def __init__(self) -> None:
        self._done: list[Segment] = []
        self._attrs: tuple[Kind, int | None, bool] | None = None
        self._texts: list[str] = []

    def add(self, text: str, kind: Kind, message: int | None = None, trained: bool = False) -> None:
        if not text:
            return
        attrs = (kind, message, trained)
        if attrs != self._attrs:
            self._flush()
            self._attrs = attrs
        self._texts.append(text)

    def control(self, text: str, message: int | None = None, trained: bool = False) -> None:
        """Template text (may contain special tokens)."""
        self.add(text, Kind.CONTROL, message, trained)

    def content(self, text: str, message: int | None = None, trained: bool = False) -> None:
        """Text from the conversation (never special tokens)."""
        self.add(text, Kind.CONTENT, message, trained)

    def turn(
        self,
        prefix: str,
        text: str,
        suffix: str,
        separator: str,
        message: int | None,
        trained: bool = False,
    ) -> None:
        """A whole turn: control ``prefix``, content ``text``, control ``suffix`` (trained with
        the text: the end-of-turn marker the model writes), untrained control ``separator``.
        Also any content between two pieces of template text (``separator=""``)."""
        self.add(prefix, Kind.CONTROL, message)
        self.add(text, Kind.CONTENT, message, trained)
        self.add(suffix, Kind.CONTROL, message, trained)
        self.add(separator, Kind.CONTROL, message)

    def extend(self, segments: Iterable[Segment]) -> None:
        for s in segments:
            self.add(s.text, s.kind, s.message, s.trained)

    def _flush(self) -> None:
        if self._texts:
            kind, message, trained = self._attrs  # type: ignore[misc]
            texts = self._texts
            self._done.append(
                Segment(texts[0] if len(texts) == 1 else "".join(texts), kind, message, trained)
            )
            self._texts = []

    @property
    def segments(self) -> list[Segment]:
        """The merged segments so far (the builder may still be extended afterwards)."""
        self._flush()
        self._attrs = None
        return self._done

    def text(self) -> str:
        return join(self.segments)


class TextSink(SegmentBuilder):
    """The builder of ``Template.render``: the same template calls, only the text is kept.

    Its :attr:`segments` is one CONTROL segment holding the whole prompt, never used for
    tokens or masks (those always come from a full :class:`SegmentBuilder`).
    """

    __slots__ = ()

    def __init__(self) -> None:
        self._texts: list[str] = []

    def add(self, text: str, kind: Kind, message: int | None = None, trained: bool = False) -> None:
        self._texts.append(text)

    def control(self, text: str, message: int | None = None, trained: bool = False) -> None:
        self._texts.append(text)

    def content(self, text: str, message: int | None = None, trained: bool = False) -> None:
        self._texts.append(text)

    def turn(
        self,
        prefix: str,
        text: str,
        suffix: str,
        separator: str,
        message: int | None,
        trained: bool = False,
    ) -> None:
        self._texts += (prefix, text, suffix, separator)

    @property
    def segments(self) -> list[Segment]:
        text = "".join(self._texts)
        return [Segment(text, _CONTROL)] if text else []

    def text(self) -> str:
        return "".join(self._texts)


def truncate_after_content(segments: Sequence[Segment], message: int) -> list[Segment]:
    """Cut everything after the last content segment of ``message``.

    Used for ``continue_final_message``: the final message is left open so the
    model continues it. If the message has no content segment (empty content), cut
    before its first trained segment, so the text ends with the open turn header
    rather than a closed turn; failing that, after its last segment of any kind.
    """
    last = first_trained = None
    for i, s in enumerate(segments):
        if s.message != message:
            continue
        if s.kind is Kind.CONTENT:
            last = i + 1
        elif s.trained and first_trained is None:
            first_trained = i
    if last is not None:
        return list(segments[:last])
    if first_trained is not None:
        return list(segments[:first_trained])
    for i in range(len(segments) - 1, -1, -1):
        if segments[i].message == message:
            return list(segments[: i + 1])
    return list(segments)
