"""The ``think`` reasoning parser: ``<think>…</think>`` before the answer.

It wraps the family's tool parser: reasoning text goes to ``reasoning_content``,
the rest is fed to the tool parser. ``thinking_prefilled`` means the prompt
already opened the block (output starts inside it); a ``<think>`` the model
writes again at the very start (after whitespace only) is then markup and
dropped — a ``<think>`` later in the reasoning is the model's text. Whitespace
between the markers and the text (the template's own newlines) is not part of
either. A block that never closes (truncated thinking) is all reasoning.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from enum import auto
from typing import Any, ClassVar

from .base import WS, Emitter, FormatParser
from .markers import marker_set
from .special import SpecialTokens
from .states import State, StateMachine

_OPEN, _CLOSE = "<think>", "</think>"


class Think(State):
    """States of :class:`ThinkParser`."""

    START = auto()  # before any text: an opener, else the answer
    PREFILLED = auto()  # the prompt opened the block: a repeated opener?
    REASONING = auto()
    AFTER = auto()  # whitespace after the block
    INNER = auto()  # the answer, given to the tool parser


class ThinkParser(StateMachine, FormatParser):
    """States: :class:`Think`.

    Other families' blocks are subclasses with other markers (:attr:`open_marker`,
    :attr:`close_marker`, and :attr:`special_markers` / :attr:`openers` to match;
    see :func:`think_parser`). Subclasses add answer wrappers: :attr:`openers` are the
    markers recognised at the start (marker → state), :attr:`after_openers` those
    recognised right after the reasoning block.
    """

    states: ClassVar[type[State] | None] = Think

    name = "think"
    #: The markers that open and close the reasoning block.
    open_marker: ClassVar[str] = _OPEN
    close_marker: ClassVar[str] = _CLOSE
    special_markers: ClassVar[tuple[str, ...]] = (_OPEN, _CLOSE)
    openers: ClassVar[tuple[tuple[str, State], ...]] = ((_OPEN, Think.REASONING),)
    after_openers: ClassVar[tuple[tuple[str, State], ...]] = ()
    #: The model's output starts inside the block whatever the prompt ends with (ERNIE 4.5
    #: Thinking opens it itself without writing the opener): ``thinking_prefilled`` defaults
    #: to True.
    starts_inside: ClassVar[bool] = False

    @classmethod
    def configured_states(cls) -> Iterable[Any]:
        return [state for _marker, state in (*cls.openers, *cls.after_openers)]

    def __init__(
        self, inner: FormatParser, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]
    ) -> None:
        super().__init__(out, budget, options)
        self.inner = inner
        self._close = marker_set((self.close_marker,), frozenset(self.special_markers))
        self.state = Think.PREFILLED if options.get("thinking_prefilled") else Think.START
        self._heads = self.openers  # the openers the ``start`` state looks for
        self._lead = True  # strip leading whitespace of the reasoning
        self._ws = ""  # held trailing whitespace of the reasoning
        self._inner_fed = False

    @property
    def in_answer(self) -> bool:
        """Whether the tool parser now reads the text (the block and what follows it are read)."""
        return self.state is Think.INNER

    def _s_start(self) -> bool:
        """Before the first text: an opener (after whitespace), else the answer starts."""
        buf = self.buf
        rest = buf[self.pos :].lstrip(WS)
        if not rest and not self.final:
            return False
        at = len(buf) - len(rest)
        for marker, state in self._heads:
            if rest.startswith(marker):
                if self.real(marker, at):
                    self.pos = at + len(marker)
                    self.state = state
                    return True
            elif marker.startswith(rest) and not self.final:
                return False
        self.state = Think.INNER
        return True

    def _s_prefilled(self) -> bool:
        """Output that starts inside the block: a leading ``<think>`` is the model repeating
        the prompt's; a leading call marker of the tool parser (its ``skips_reasoning``) means
        the model skipped reasoning and the output is the answer."""
        opener = self.open_marker
        rest = self.buf[self.pos :].lstrip(WS)
        at = len(self.buf) - len(rest)
        for marker in (opener, *self.inner.skips_reasoning):
            if not self.final and len(rest) < len(marker) and marker.startswith(rest):
                return False  # nothing yet, or a part of a marker
        for marker in self.inner.skips_reasoning:
            if rest.startswith(marker) and self.real(marker, at):
                self.state = Think.INNER
                return True
        if rest.startswith(opener) and self.real(opener, at):
            self.pos = at + len(opener)
        self.state = Think.REASONING
        return True

    def _s_reasoning(self) -> bool:
        buf = self.buf
        end, marker, resume = self._close.split(buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(buf)
        text = buf[self.pos : end]
        self.pos = resume
        if self._lead:
            text = text.lstrip(WS)
            self._lead = not text
        if marker is not None or self.final:
            self.out.reasoning((self._ws + text).rstrip(WS))
            self._ws = ""
            if marker is None:
                return False
            self.state = Think.AFTER
            return True
        body = text.rstrip(WS)
        if body:
            self.out.reasoning(self._ws + body)
            self._ws = text[len(body) :]
        else:
            self._ws += text
        return False

    def _s_after(self) -> bool:
        if not self.skip_ws() and not self.final:
            return False
        if self.after_openers:
            self._heads = self.after_openers
            self.state = Think.START
        else:
            self.state = Think.INNER
        return True

    def _s_inner(self) -> bool:
        self.feed_inner(self.buf[self.pos :], self.pos)
        self.pos = len(self.buf)
        return False

    def feed_inner(self, text: str, at: int) -> None:
        """Give the tool parser ``text``, which starts at ``self.buf[at]`` (``at`` may be
        negative: text held back from before the buffer).

        When the inner parser holds nothing undecided, its stream offset is set to
        where ``text`` starts, so markup dropped in between (e.g. a wrapper's
        closing tag) does not shift the positions it asks :meth:`real` about.
        """
        inner = self.inner
        if not text:
            return
        if not self._inner_fed or inner.pos >= len(inner.buf):
            inner.buf, inner.pos = "", 0
            inner.offset = self.offset + at
        self._inner_fed = True
        inner.feed(text)

    def low_water(self) -> int:
        return min(self.offset, self.inner.low_water()) if self._inner_fed else self.offset

    def close(self) -> None:
        if self.state is Think.REASONING:
            self.out.reasoning(self._ws.rstrip(WS))
        self.inner.finish()


def think_parser(
    name: str, open_marker: str, close_marker: str, *, qualname: str | None = None
) -> type[ThinkParser]:
    """A :class:`ThinkParser` for a block written ``open_marker … close_marker``.

    ``qualname`` is the module-level name the caller binds the class to: the class then
    belongs to the caller's module under that name, so templates that name it pickle.
    """
    attrs = {
        "name": name,
        "open_marker": open_marker,
        "close_marker": close_marker,
        "special_markers": (open_marker, close_marker),
        "openers": ((open_marker, Think.REASONING),),
        "__doc__": f"Reasoning in ``{open_marker}…{close_marker}`` before the answer.",
        "__module__": __name__,
    }
    if qualname is not None:
        attrs["__module__"] = sys._getframe(1).f_globals["__name__"]
        attrs["__qualname__"] = qualname
    return type(qualname or f"ThinkParser_{name}", (ThinkParser,), attrs)
