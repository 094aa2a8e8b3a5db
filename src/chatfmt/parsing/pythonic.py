"""Pythonic tool calls ``[f(a=1, b="x"), g()]``: Llama 3.2 / Llama 4 (prompted for them), LFM2.

A call list is read by a scanner that never evaluates anything: each keyword
argument's value is delimited (quotes, escapes, brackets), then read by
:func:`~.literals.python_literal`, which walks the syntax tree of literals only.
A value that is not a literal (a name, a call, an f-string, ``__import__(…)``)
flags the call; its text is kept, never run. Arguments stream as each keyword
argument completes (``{"a": 1`` / ``, "b": "x"`` / ``}``), the name as soon as
``name(`` and the first keyword (or ``)``) are seen.

Models write the format loosely, so the scanner also accepts what the LFM2.5
template itself renders: single-quoted strings with unescaped quotes inside
(``'sed -n '1,5p' f'``: a quote closes the string only where a delimiter follows —
``)`` then ``,``/``]``/a marker, ``,`` then the next ``key=``, or, inside a list or
dict, ``, ] } :``), raw newlines and NUL characters in strings, JSON
``true``/``false``/``null`` and zero-padded integers.

``pythonic`` (alias ``llama32_pythonic``; Llama 4's ``llama4`` parser, alias
``llama4_pythonic``, extends it): a bare list anywhere in the text — ``[`` counts only when ``name(`` and ``key=`` or ``)`` follow,
so ``[1] see …`` stays content — and ``<|python_start|>…<|python_end|>`` blocks.
``lfm2``: ``<|tool_call_start|>[…]<|tool_call_end|>`` blocks only; a block may
also hold JSON call objects (``[{"name": …, "arguments": …}]``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar, Literal

from .._moved import moved_name
from .base import Emitter
from .blocks import Block, BlockParser
from .literals import NotLiteral, python_literal
from .special import SpecialTokens
from .states import State
from .xml_values import ArgPart, KeywordArgs

#: How far the scanner looks ahead to decide a ``[``, a key or a quote (then it decides anyway).
LOOKAHEAD = 256

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_WS_RUN = re.compile(r"[ \t\r\n]*")
_KEY = re.compile(r"[ \t\r\n]*([A-Za-z_][A-Za-z0-9_]*)[ \t\r\n]*=")
_KEY_PREFIX = re.compile(r"[ \t\r\n]*(?:[A-Za-z_][A-Za-z0-9_]*[ \t\r\n]*)?")
_PLAIN = re.compile(r"[^'\"()\[\]{},]+")
#: Characters that need attention inside a single-quoted string, per delimiter.
_STRING_STOP = {q: re.compile("[\\\\\n\r\x00" + q + "]") for q in ("'", '"')}
_REPAIR = {"\n": "\\n", "\r": "\\r", "\x00": "\\x00"}


def _skip_ws(text: str, pos: int) -> int:
    return _WS_RUN.match(text, pos).end()  # type: ignore[union-attr]


def call_head(text: str, pos: int, final: bool) -> tuple[str, int] | Literal[False] | None:
    """Is ``text[pos:]`` (after optional whitespace) ``name(`` then ``key=`` or ``)``?

    ``(name, position after "(")`` if so, ``False`` if not, ``None`` if more text is
    needed to tell (never more than :data:`LOOKAHEAD` characters).
    """
    n = len(text)
    start = _skip_ws(text, pos)
    m = _NAME.match(text, start)
    if m is None:
        return None if start == n and not final and n - pos < LOOKAHEAD else False
    end = m.end()
    if end + 1 == n and text[end] == "." and not final and n - pos < LOOKAHEAD:
        return None  # a dotted name, cut after the dot
    paren = _skip_ws(text, end)
    if paren == n:
        return None if not final and n - pos < LOOKAHEAD else False
    if text[paren] != "(":
        return False
    after = _skip_ws(text, paren + 1)
    if after < n and text[after] == ")":
        return m.group(), paren + 1
    k = _KEY.match(text, after)
    if k is not None:
        if k.end() == n and not final:
            return None
        if k.end() < n and text[k.end()] == "=":
            return False  # "==": an expression, not a keyword
        return m.group(), paren + 1
    if not final and n - pos < LOOKAHEAD and _KEY_PREFIX.fullmatch(text, after):
        return None
    return False


class PythonicArgs(KeywordArgs):
    """Scans ``k=v, …)`` (the text after a call's ``(``) for call ``index`` (see module doc).

    ``status`` becomes ``"done"`` after the closing parenthesis (the call may be
    flagged: a positional argument, a value that is not a literal) or ``"failed"``
    when the stream ended first. A flagged call's arguments are the members read
    before the bad argument, then the raw text of the rest of its argument list.
    """

    __slots__ = ("_quote", "_src")

    def __init__(self, out: Emitter, index: int) -> None:
        super().__init__(out, index)
        self._src: list[str] = []  # the current value as repaired Python source
        self._quote = ""

    # ------------------------------------------------------------------ outcomes
    def _finish_value(self) -> None:
        key, src = self._key, "".join(self._src)
        self._src.clear()
        self._key = None
        if not self._failed:
            if key is None:
                self._fail(f"positional argument {src.strip()[:40]!r}")
            elif not src.strip():
                self._fail(f"argument {key!r} has no value")
            else:
                try:
                    value = python_literal(src)
                except NotLiteral:
                    self._fail(f"argument {key!r} is not a literal: {src.strip()[:40]!r}")
                else:
                    self._members.member(key, value)
                    self._raw.clear()
        self._flush_raw()

    def _end(self) -> None:
        self._flush_raw()
        if not self._failed:
            self._members.close()
            self.out.check_arguments(self.index)
        self.status = "done"

    # ------------------------------------------------------------------ scanning
    def _closes(self, text: str, i: int, final: bool) -> bool | None:
        """Whether the quote at ``text[i]`` closes its (single-quoted) string; None: undecided."""
        n = len(text)
        undecided = None if not final and n - i < LOOKAHEAD else True
        j = _skip_ws(text, i + 1)
        if j >= n:
            return undecided
        c = text[j]
        if self._depth > 0:
            return c in ",]}:)"
        if c == ")":
            k = _skip_ws(text, j + 1)
            if k >= n:
                return undecided
            return text[k] in ",]<"
        if c != ",":
            return False
        k = _skip_ws(text, j + 1)
        if k >= n:
            return undecided
        if text[k] == ")":
            return True
        m = _IDENT.match(text, k)
        if m is None:
            return False
        e = _skip_ws(text, m.end())
        if e >= n:
            return undecided
        if text[e] != "=":
            return False
        if e + 1 >= n:
            return undecided
        return text[e + 1] != "="

    def _string(self, text: str, pos: int, final: bool) -> int | None:
        """Scan inside a string from ``pos``; the new position, or None to wait for more text."""
        quote, n = self._quote, len(text)
        raw, src = self._raw, self._src
        if len(quote) == 3:
            end = text.find(quote, pos)
            if end < 0:
                cut = n
                if not final:  # a closing quote may be cut: hold back trailing quote characters
                    while cut > pos and n - cut < 2 and text[cut - 1] == quote[0]:
                        cut -= 1
                raw.append(text[pos:cut])
                src.append(text[pos:cut])
                return cut if cut > pos else None
            raw.append(text[pos : end + 3])
            src.append(text[pos : end + 3])
            self._quote = ""
            return end + 3
        m = _STRING_STOP[quote].search(text, pos)
        stop = n if m is None else m.start()
        raw.append(text[pos:stop])
        src.append(text[pos:stop])
        if m is None:
            return stop if stop > pos else None
        c = text[stop]
        if c == "\\":
            if stop + 1 >= n:
                if not final:
                    return stop if stop > pos else None
                raw.append(c)
                src.append("\\\\")
                return n
            pair = text[stop : stop + 2]
            raw.append(pair)
            src.append("\\x00" if pair[1] == "\x00" else pair)
            return stop + 2
        if c != quote:
            raw.append(c)
            src.append(_REPAIR[c])
            return stop + 1
        closes = self._closes(text, stop, final)
        if closes is None:
            return stop if stop > pos else None
        raw.append(c)
        src.append(c if closes else "\\" + c)
        if closes:
            self._quote = ""
        return stop + 1

    def feed(self, text: str, pos: int, final: bool) -> int:
        """Scan ``text[pos:]``; returns where the call ended or where more text is needed."""
        n = len(text)
        raw = self._raw
        while pos < n and self.status is None:
            if self._state is ArgPart.KEY:
                j = _skip_ws(text, pos)
                if j > pos:
                    raw.append(text[pos:j])
                    pos = j
                    continue
                c = text[pos]
                if c == ",":
                    raw.append(c)
                    pos += 1
                    continue
                if c == ")":
                    pos += 1
                    self._end()
                    break
                m = _KEY.match(text, pos)
                if m is not None:
                    if m.end() == n and not final:
                        break  # "=" or "=="?
                    if m.end() < n and text[m.end()] == "=":
                        m = None  # "==": part of a positional expression
                if m is not None:
                    self._key = m.group(1)
                    raw.append(text[pos : m.end()])
                    pos = m.end()
                    self._state = ArgPart.VALUE
                    continue
                if not final and n - pos < LOOKAHEAD and _KEY_PREFIX.fullmatch(text, pos):
                    break  # maybe a key: wait
                self._key = None  # a positional argument
                self._state = ArgPart.VALUE
                continue
            if self._quote:
                at = self._string(text, pos, final)
                if at is None:
                    break
                pos = at
                continue
            c = text[pos]
            if c in "'\"":
                if not final and n - pos < 3 and text[pos:] == c * (n - pos):
                    break  # maybe a triple quote
                self._quote = c * 3 if text.startswith(c * 3, pos) else c
                raw.append(self._quote)
                self._src.append(self._quote)
                pos += len(self._quote)
                continue
            if self._depth <= 0 and c in ",)":
                self._finish_value()
                self._state = ArgPart.KEY
                if c == ")":
                    pos += 1
                    self._end()
                continue
            if c in "([{":
                self._depth += 1
            elif c in ")]}":
                self._depth -= 1
            m = _PLAIN.match(text, pos + 1)
            end = m.end() if m is not None else pos + 1
            raw.append(text[pos:end])
            self._src.append(text[pos:end])
            pos = end
        if final and self.status is None:
            self.close()
        return pos

    def close(self) -> None:
        """End of stream before the closing parenthesis: the call is truncated."""
        if self.status is None:
            self._fail("truncated")
            self._src.clear()
            self._flush_raw()
            self.status = "failed"


class Pythonic(State):
    """States of :class:`PythonicParser` beyond :class:`~.blocks.Block`."""

    PY_BARE = auto()  # a ``[`` in the text: a call list or prose?
    PY_BLOCK = auto()  # inside a start marker
    PY_CALL = auto()  # a call's arguments
    PY_AFTER = auto()  # after a call: ``,``, ``]`` or the end marker
    PY_NEXT = auto()  # after ``,``: the next call's head


class PythonicParser(BlockParser):
    """Pythonic call lists, bare or in ``<|python_start|>`` blocks (see module doc).

    States besides :class:`~.blocks.BlockParser`'s: :class:`Pythonic`.
    """

    states: ClassVar[type[State] | None] = Pythonic

    name = "pythonic"
    special_markers: ClassVar[tuple[str, ...]] = ("<|python_start|>", "<|python_end|>")
    starts: ClassVar[Mapping[str, State]] = {
        "<|python_start|>": Pythonic.PY_BLOCK,
        "[": Pythonic.PY_BARE,
    }
    ends: ClassVar[Mapping[str, str | None]] = {"<|python_start|>": "<|python_end|>"}

    def __init__(self, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]) -> None:
        super().__init__(out, budget, options)
        self.args: PythonicArgs | None = None
        self.bracketed = False  # the open call list started with "["

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self.bracketed = False

    def _start_py_call(self, name: str, at: int) -> None:
        self.args = PythonicArgs(self.out, self.out.start_call(name))
        self.pos = at
        self.state = Pythonic.PY_CALL

    def _not_calls(self) -> None:
        """What follows is not a call: inside a block a flagged call, else content."""
        if self.cur_end:
            self.junk_index = self.out.start_call("", error="not a tool call")
            self.state = Block.JUNK
        else:
            self.end_block()

    def _s_py_bare(self) -> bool:
        head = call_head(self.buf, self.pos, self.final)
        if head is None:
            return False
        if head is False:
            self.out.content("[")
            self.end_block()
            return True
        self.bracketed = True
        self._start_py_call(*head)
        return True

    def _s_py_block(self) -> bool:
        if not self.skip_ws():
            if self.final:
                self.end_block()
                return True
            return False
        hit = self.at_marker(self.cur_end) if self.cur_end else False
        if hit is None:
            return False
        if hit:
            self.end_block()
            return True
        buf, pos = self.buf, self.pos
        if buf[pos] == "{":
            self.state = Block.GAP  # JSON call objects
            return True
        if buf[pos] == "[":
            inner = _skip_ws(buf, pos + 1)
            if inner == len(buf) and not self.final:
                return False
            if inner < len(buf) and buf[inner] in "{]":
                self.state = Block.GAP  # a JSON list (or an empty one)
                return True
            head = call_head(buf, pos + 1, self.final)
            if head is None:
                return False
            if head:
                self.bracketed = True
                self._start_py_call(*head)
                return True
            self._not_calls()
            return True
        head = call_head(buf, pos, self.final)
        if head is None:
            return False
        if head:
            self._start_py_call(*head)
        else:
            self._not_calls()
        return True

    def _s_py_call(self) -> bool:
        args = self.args
        assert args is not None
        self.pos = args.feed(self.buf, self.pos, self.final)
        if args.status is None:
            return False
        self.args = None
        self.block_calls += 1
        self.state = Pythonic.PY_AFTER
        return True

    def _s_py_after(self) -> bool:
        """After a call: ``,`` (another call?), ``]``, the end marker, or the end of the calls.

        Whitespace is looked past, not consumed, until it is known to be markup: when
        the calls end in bare text it stays content.
        """
        buf = self.buf
        at = _skip_ws(buf, self.pos)
        if at == len(buf):
            if self.final:
                if self.cur_end:
                    self.pos = at
                self.end_block()
                return True
            return False
        c = buf[at]
        if c == ",":
            self.state = Pythonic.PY_NEXT
            return True
        if c == "]" and self.bracketed:
            self.pos = at + 1
            self.bracketed = False
            self.state = Block.AFTER_LIST if self.cur_end else Block.TEXT
            return True
        if self.cur_end:
            self.pos = at
            hit = self.at_marker(self.cur_end)
            if hit is None:
                return False
            if hit:
                self.end_block()
                return True
        self._not_calls()
        return True

    def _s_py_next(self) -> bool:
        """At ``,`` after a call: the next call, else the calls end (the comma is not markup)."""
        comma = _skip_ws(self.buf, self.pos)
        head = call_head(self.buf, comma + 1, self.final)
        if head is None:
            return False
        if head:
            self._start_py_call(*head)
            return True
        if self.cur_end:
            self.pos = comma
        self._not_calls()
        return True

    def close(self) -> None:
        if self.args is not None:
            self.args.close()
            self.args = None


__all__ = ["PythonicArgs", "PythonicParser", "call_head"]


def __getattr__(name: str) -> Any:
    # Names that moved to a family package keep working for one release (with a warning).
    return moved_name(__name__, name)
