"""The ``think`` reasoning parser: ``<think>…</think>`` before the answer.

It wraps the family's tool parser: reasoning text goes to ``reasoning_content``,
the rest is fed to the tool parser. ``thinking_prefilled`` means the prompt
already opened the block (output starts inside it); a ``<think>`` the model
writes again at the very start (after whitespace only) is then markup and
dropped — a ``<think>`` later in the reasoning is the model's text. Whitespace
between the markers and the text (the template's own newlines) is not part of
either. A block that never closes (truncated thinking) is all reasoning.

A format whose model may start a tool call before closing its thinking lists the call
markers: in :attr:`ThinkParser.ends_reasoning` (Kimi K2's call section) the first of them
inside the block ends it there and the answer (the call) starts with it; in
:attr:`ThinkParser.ends_unclosed` (Qwen3's ``<tool_call>``) the marker ends the block only
if the block is never closed: a ``</think>`` later makes it reasoning text (a call the model
drafted in its thinking, not one to run). Streamed, the text from such a marker is held
until the close marker or the end of the output decides, so a whole output and any
chunking of it parse alike. :meth:`ThinkParser.end_at_calls` makes those markers end the
block at once (an engine that must hand a call to its tool parser as it streams: vLLM).

:meth:`ThinkParser.keep_whitespace` switches the whitespace rule off for an engine whose
reasoning API returns the text around the markers as written (vLLM's).
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
    #: Call markers that, inside the block, also end it: the answer (the call) starts with
    #: the marker (list them in :attr:`special_markers` too when they are special tokens).
    ends_reasoning: ClassVar[tuple[str, ...]] = ()
    #: Call markers that end the block where it is never closed (see the module doc).
    ends_unclosed: ClassVar[tuple[str, ...]] = ()
    #: Markup of the answer's wrapper (Kimi K3's ``<|open|>response<|sep|>`` …): dropped from
    #: the answer before the tool parser reads it, so the answer is clean with any tool parser
    #: (``plain`` too: an engine that runs only the reasoning parser).
    answer_markup: ClassVar[tuple[str, ...]] = ()
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
        specials = frozenset(self.special_markers)
        self._close = marker_set(
            (self.close_marker, *self.ends_reasoning, *self.ends_unclosed), specials
        )
        self._close_only = marker_set((self.close_marker,), specials)
        self._markup = marker_set(self.answer_markup, specials) if self.answer_markup else None
        self._eager = False  # ends_unclosed markers end the block at once
        self._held = -1  # while held at an ends_unclosed marker: where to search on from pos
        self.state = Think.PREFILLED if options.get("thinking_prefilled") else Think.START
        self._heads = self.openers  # the openers the ``start`` state looks for
        self._lead = True  # strip leading whitespace of the reasoning
        self._ws = ""  # held trailing whitespace of the reasoning
        self._strip = True  # whitespace next to the markers is markup
        #: Whether the output was inside the block (opened by the model or by the prompt),
        #: even one with no reasoning text.
        self.opened = False
        self._inner_fed = False

    def end_at_calls(self) -> None:
        """Let the :attr:`ends_unclosed` markers end the block at once, as
        :attr:`ends_reasoning` ones do (call before any feed)."""
        self._eager = True

    def keep_whitespace(self) -> None:
        """Keep the whitespace between the markers and the text (call before any feed):
        reasoning and answer are the text around the markers as written."""
        self._strip = self._lead = False

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
        self.opened = True
        if self._held >= 0:
            return self._held_step()
        buf = self.buf
        end, marker, resume = self._close.split(buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(buf)
        text = buf[self.pos : end]
        self.pos = resume
        if self._lead:
            text = text.lstrip(WS)
            self._lead = not text
        if marker is not None and marker in self.ends_unclosed and not self._eager:
            self._emit_body(text)  # a call or a draft: decided by what follows
            self.pos = end
            self._held = len(marker)
            return True
        if marker is not None or self.final:
            text = self._ws + text
            self.out.reasoning(text.rstrip(WS) if self._strip else text)
            self._ws = ""
            if marker is None:
                return False
            if marker in self.ends_reasoning or marker in self.ends_unclosed:
                self.pos -= len(marker)  # a call ended the block: the tool parser reads it
                self.state = Think.INNER
            else:
                self.state = Think.AFTER
            return True
        self._emit_body(text)
        return False

    def _emit_body(self, text: str) -> None:
        """Reasoning ``text`` that more may follow: trailing whitespace held (when stripped)."""
        body = text.rstrip(WS) if self._strip else text
        if body:
            self.out.reasoning(self._ws + body)
            self._ws = text[len(body) :]
        else:
            self._ws += text

    def _held_step(self) -> bool:
        """At a call marker inside the block (``self.pos``): the close marker later makes the
        text reasoning; the end of the output without one makes it the answer."""
        buf = self.buf
        end, marker, resume = self._close_only.split(buf, self.pos + self._held, self.real)
        if marker is not None:
            text = self._ws + buf[self.pos : end]
            self.out.reasoning(text.rstrip(WS) if self._strip else text)
            self._ws, self._held, self.pos = "", -1, resume
            self.state = Think.AFTER
            return True
        if not self.final:
            self._held = end - self.pos  # searched up to here (the rest may start the marker)
            return False
        if not self._strip:
            self.out.reasoning(self._ws)
        self._ws, self._held = "", -1
        self.state = Think.INNER  # never closed: the call is the answer
        return True

    def _s_after(self) -> bool:
        if self._strip and not self.skip_ws() and not self.final:
            return False
        if self.after_openers:
            self._heads = self.after_openers
            self.state = Think.START
        else:
            self.state = Think.INNER
        return True

    def _s_inner(self) -> bool:
        if self._markup is None:
            self.feed_inner(self.buf[self.pos :], self.pos)
            self.pos = len(self.buf)
            return False
        end, marker, resume = self._markup.split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        self.feed_inner(self.buf[self.pos : end], self.pos)
        self.pos = resume
        return marker is not None

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
    name: str,
    open_marker: str,
    close_marker: str,
    *,
    qualname: str | None = None,
    answer_markup: tuple[str, ...] = (),
) -> type[ThinkParser]:
    """A :class:`ThinkParser` for a block written ``open_marker … close_marker`` (and
    ``answer_markup``, :attr:`ThinkParser.answer_markup`).

    ``qualname`` is the module-level name the caller binds the class to: the class then
    belongs to the caller's module under that name, so templates that name it pickle.
    """
    attrs = {
        "name": name,
        "open_marker": open_marker,
        "close_marker": close_marker,
        "special_markers": (open_marker, close_marker),
        "openers": ((open_marker, Think.REASONING),),
        "answer_markup": answer_markup,
        "__doc__": f"Reasoning in ``{open_marker}…{close_marker}`` before the answer.",
        "__module__": __name__,
    }
    if qualname is not None:
        attrs["__module__"] = sys._getframe(1).f_globals["__name__"]
        attrs["__qualname__"] = qualname
    return type(qualname or f"ThinkParser_{name}", (ThinkParser,), attrs)
