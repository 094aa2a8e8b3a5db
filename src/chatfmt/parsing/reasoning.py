"""The ``think`` reasoning parser: ``<think>…</think>`` before the answer.

It wraps the family's tool parser: reasoning text goes to ``reasoning_content``,
the rest is fed to the tool parser. ``thinking_prefilled`` means the prompt
already opened the block (output starts inside it). Whitespace between the
markers and the text (the template's own newlines) is not part of either.
A block that never closes (truncated thinking) is all reasoning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import REASONING_PARSERS, WS, Emitter, FormatParser
from .markers import marker_set
from .special import SpecialTokens

_OPEN, _CLOSE = "<think>", "</think>"


class ThinkParser(FormatParser):
    """States: ``start`` (before any text), ``reasoning``, ``after`` (strip whitespace), ``inner``."""

    name = "think"
    special_markers = (_OPEN, _CLOSE)

    def __init__(
        self, inner: FormatParser, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]
    ) -> None:
        super().__init__(out, budget, options)
        self.inner = inner
        self._close = marker_set((_CLOSE,), frozenset(self.special_markers))
        self.state = "reasoning" if options.get("thinking_prefilled") else "start"
        self._lead = True  # strip leading whitespace of the reasoning
        self._ws = ""  # held trailing whitespace of the reasoning
        self._inner_fed = False

    def step(self) -> bool:
        buf = self.buf
        if self.state == "start":
            rest = buf[self.pos :].lstrip(WS)
            if not rest and not self.final:
                return False
            if rest.startswith(_OPEN):
                at = len(buf) - len(rest)
                if self.real(_OPEN, at):
                    self.pos = at + len(_OPEN)
                    self.state = "reasoning"
                    return True
            elif _OPEN.startswith(rest) and not self.final:
                return False
            self.state = "inner"
            return True
        if self.state == "reasoning":
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
                self.state = "after"
                return True
            body = text.rstrip(WS)
            if body:
                self.out.reasoning(self._ws + body)
                self._ws = text[len(body) :]
            else:
                self._ws += text
            return False
        if self.state == "after":
            if not self.skip_ws() and not self.final:
                return False
            self.state = "inner"
            return True
        # inner
        if not self._inner_fed:  # the inner parser's stream starts here
            self._inner_fed = True
            self.inner.offset = self.offset + self.pos
        self.inner.feed(buf[self.pos :])
        self.pos = len(buf)
        return False

    def low_water(self) -> int:
        return min(self.offset, self.inner.low_water()) if self._inner_fed else self.offset

    def close(self) -> None:
        if self.state == "reasoning":
            self.out.reasoning(self._ws.rstrip(WS))
        self.inner.finish()


REASONING_PARSERS["think"] = ThinkParser
REASONING_PARSERS["deepseek_r1"] = ThinkParser
REASONING_PARSERS["qwen3"] = ThinkParser
