"""Keyword-argument calls ``f(k=v, …)`` with Python literal values, turned into JSON as they stream.

Used for ChatGLM3 ``tool_call(…)`` and Llama built-in ``tool.call(…)``;
:func:`python_literal` (a strict, JSON-only literal reader) serves the pythonic parsers. Each value
is delimited by a small scanner (quotes, escapes, brackets) and decoded with
:func:`ast.literal_eval` (never ``eval``); a value that is not a literal is kept
as its text. Each finished argument is emitted as ``{"k": v`` / ``, "k": v`` and
the call's ``)`` as ``}``, so the JSON text is the same however the input is cut.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from typing import Any

from .base import WS, Emitter
from .xml_values import ArgPart

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
        self._state = ArgPart.KEY
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
            if self._state is ArgPart.KEY:
                if c in WS or c == ",":
                    pos += 1
                elif c == self.close and not self._key:
                    pos += 1
                    self._end()
                elif c == "=":
                    pos += 1
                    self._state = ArgPart.VALUE
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
                self._state = ArgPart.KEY
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
            rest = (
                "".join(self._key)
                + ("=" if self._state is ArgPart.VALUE else "")
                + "".join(self._val)
            )
            self._broken("truncated", rest)
        return pos


class NotLiteral(ValueError):
    """Raised by :func:`python_literal` for text that is not a JSON-compatible literal."""


_JSON_NAMES = {
    "True": True,
    "False": False,
    "None": None,
    "true": True,
    "false": False,
    "null": None,
}


def python_literal(src: str) -> Any:
    """The JSON value of a Python literal (never evaluated: the syntax tree is walked).

    Accepts strings, numbers, ``True``/``False``/``None`` (and JSON's
    ``true``/``false``/``null``), lists, tuples and sets (as lists), dicts with
    string or number keys, signed numbers and zero-padded integers (``07``).
    Anything else — names, calls, attribute access, operators, f-strings, bytes,
    non-finite numbers — raises :class:`NotLiteral`.
    """
    text = src.strip()
    if _PADDED_INT.fullmatch(text):
        return int(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, mode="eval")
        return _node_value(tree.body)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        if isinstance(exc, NotLiteral):
            raise
        raise NotLiteral(f"not a literal: {exc.__class__.__name__}") from None


_PADDED_INT = re.compile(r"[+-]?0[0-9]+")


def _node_value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return value
        raise NotLiteral(f"{type(value).__name__} value")
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_node_value(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise NotLiteral("dict unpacking")
            key = _node_value(key_node)
            if isinstance(key, bool) or key is None or not isinstance(key, (str, int, float)):
                raise NotLiteral("dict key that is not a string or number")
            out[key if isinstance(key, str) else json.dumps(key)] = _node_value(value_node)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _node_value(node.operand)
        if isinstance(operand, bool) or not isinstance(operand, (int, float)):
            raise NotLiteral("sign on a non-number")
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    raise NotLiteral(f"{type(node).__name__} expression")
