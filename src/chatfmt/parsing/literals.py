"""Keyword-argument calls ``f(k=v, …)`` with Python literal values, turned into JSON as they stream.

Used for ChatGLM3 ``tool_call(…)`` and Llama built-in ``tool.call(…)``. Each value
is delimited by a small scanner (quotes, escapes, brackets) and decoded with
:func:`ast.literal_eval` (never ``eval``); a value that is not a literal is kept
as its text. Each finished argument is emitted as ``{"k": v`` / ``, "k": v`` and
the call's ``)`` as ``}``, so the JSON text is the same however the input is cut.
"""

from __future__ import annotations

import ast
import json
import warnings
from typing import Any

from .base import WS, Emitter

_OPEN, _CLOSE = "([{", ")]}"


def literal_value(text: str) -> Any:
    """A Python literal's value, or the stripped text itself when it is not a literal."""
    src = text.strip()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = ast.literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return src
    if isinstance(value, tuple | set | frozenset):
        value = list(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return src
    return value


class KwargsCall:
    """Scans ``k=v, k2=v2)`` (the text after the opening parenthesis) for call ``index``."""

    __slots__ = (
        "_depth",
        "_esc",
        "_first",
        "_key",
        "_quote",
        "_state",
        "_val",
        "close",
        "finished",
        "index",
        "out",
    )

    def __init__(self, out: Emitter, index: int, close: str = ")") -> None:
        self.out = out
        self.index = index
        self.close = close
        self.finished = False
        self._state = "key"
        self._first = True
        self._key: list[str] = []
        self._val: list[str] = []
        self._quote = ""  # current string delimiter ('"', "'", '"""' or "'''")
        self._esc = False
        self._depth = 0

    def _emit_arg(self) -> None:
        key = "".join(self._key).strip()
        value = literal_value("".join(self._val))
        self._key.clear()
        self._val.clear()
        piece = json.dumps(key, ensure_ascii=False) + ": " + json.dumps(value, ensure_ascii=False)
        self.out.args(self.index, ("{" if self._first else ", ") + piece)
        self._first = False

    def _end(self) -> None:
        self.out.args(self.index, "{}" if self._first else "}")
        self.out.check_arguments(self.index)
        self.finished = True

    def _broken(self, reason: str, rest: str) -> None:
        self.out.args(self.index, rest)
        self.out.fail(self.index, reason)
        self.finished = True

    def feed(self, text: str, pos: int, final: bool) -> int:
        """Scan ``text[pos:]``; returns the position after the call's ``)`` or where input ran out."""
        n = len(text)
        while pos < n and not self.finished:
            c = text[pos]
            if self._state == "key":
                if c in WS or c == ",":
                    pos += 1
                elif c == self.close and not self._key:
                    pos += 1
                    self._end()
                elif c == "=":
                    pos += 1
                    self._state = "value"
                elif c.isalnum() or c == "_":
                    self._key.append(c)
                    pos += 1
                else:
                    self._broken(
                        f"unexpected {c!r} in keyword arguments", "".join(self._key) + text[pos:]
                    )
                    return n
                continue
            if self._quote:
                if self._esc:
                    self._esc = False
                elif c == "\\":
                    self._esc = True
                elif text.startswith(self._quote, pos):
                    self._val.append(self._quote)
                    pos += len(self._quote)
                    self._quote = ""
                    continue
                elif len(self._quote) == 3 and c == self._quote[0] and n - pos < 3 and not final:
                    return pos  # maybe the closing triple quote: wait
                self._val.append(c)
                pos += 1
                continue
            if c in "\"'":
                if n - pos < 3 and not final:
                    return pos  # a triple quote is not decided yet
                self._quote = c * 3 if text.startswith(c * 3, pos) else c
                self._val.append(self._quote)
                pos += len(self._quote)
                continue
            if self._depth == 0 and c in (",", self.close):
                self._emit_arg()
                self._state = "key"
                pos += 1
                if c == self.close:
                    self._end()
                continue
            if c in _OPEN:
                self._depth += 1
            elif c in _CLOSE:
                self._depth -= 1
            self._val.append(c)
            pos += 1
        if final and not self.finished:
            rest = "".join(self._key) + ("=" if self._state == "value" else "") + "".join(self._val)
            self._broken("truncated", rest)
        return pos
