"""Gemma 4: ``<|tool_call>call:NAME{key:value,…}<tool_call|>`` and ``<|channel>thought\\n…<channel|>``.

Arguments are written in Gemma 4's own literal syntax (the official template's
``format_argument``): strings between ``<|"|>`` quotes (no escapes: a string ends
at the next ``<|"|>``), bare numbers, ``true``/``false``/``null``, ``{key:value}``
objects with bare (or ``<|"|>``-quoted) keys and ``[a,b]`` lists. Each top-level
argument is converted to JSON when it completes and streamed as ``{"k": v`` /
``, "k": v`` / ``}``; a string given for a parameter whose schema declares
another type is converted as XML-style values are (:func:`~.xml_values.typed_value`).
A bare word that is none of the above is kept as a string. A value that does not
read (an unterminated ``{``, a stray ``]``) flags the call with its raw text.

Reasoning: ``<|channel>thought\\n…<channel|>`` before the answer (``gemma4``
reasoning parser; with thinking off the prompt already holds an empty block);
the tool parser reads the same blocks later in the turn (between tool calls) as
reasoning too, so ``parse(text, "gemma4")`` gets them all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.base import WS, Emitter
from ...parsing.blocks import Block, BlockParser
from ...parsing.reasoning import Think, ThinkParser
from ...parsing.special import SpecialTokens
from ...parsing.states import State
from ...parsing.xml_values import ArgPart, KeywordArgs, parameter_schema, typed_value
from .markers import (
    CHANNEL_CLOSE,
    CHANNEL_OPEN,
    END_FUNCTION_CALL,
    ESCAPE,
    QUOTE,
    START_FUNCTION_CALL,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
)

CALL_START, CALL_END = TOOL_CALL_OPEN, TOOL_CALL_CLOSE
CHANNEL_START, CHANNEL_END = CHANNEL_OPEN, CHANNEL_CLOSE
THOUGHT = "thought"
#: How far a head (``call:NAME{``) or a key may run before it is decided to be broken.
LOOKAHEAD = 256

#: ``call:NAME{``; models sometimes write a stray ``:`` first (``<|tool_call>:call:…``) or
#: drop ``call`` (``<|tool_call>:NAME{``, vLLM issue 53431).
_HEAD = re.compile(r"(?::?call:|:)([A-Za-z0-9_.\-]+)\{")
_HEAD_PREFIX = re.compile(r":?(?:c(?:a(?:l(?:l(?::[A-Za-z0-9_.\-]*)?)?)?)?)?|:[A-Za-z0-9_.\-]*")
#: A head without arguments, up to the end marker (``call:NAME<tool_call|>``).
_BRACELESS_HEAD = re.compile(r"(?::?call:|:)[^{(]*")
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
#: A bare head (no ``<|tool_call>``), accepted only where the answer starts.
_BARE_HEAD = re.compile(r"call:([A-Za-z0-9_.\-]+)\{")
_BARE_KEY = re.compile(r"[^:{}\[\],<]+")
_BARE_TOKEN = re.compile(r"[^,{}\[\]<]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?")
_SPECIAL = re.compile(r"[{}\[\],<]")
#: Bare words with a JSON value (``None``: how the official template, under Python Jinja, writes null).
_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None, "None": None}


class GemmaSyntaxError(ValueError):
    """Text that is not a Gemma 4 literal."""


def _ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in WS:
        i += 1
    return i


def _read(s: str, i: int, quote: str = QUOTE) -> tuple[Any, int]:
    """The value starting at ``s[i]`` (after whitespace) and the position after it; strings
    are between ``quote`` marks (Gemma 4: ``<|"|>``, FunctionGemma: ``<escape>``)."""
    i = _ws(s, i)
    if s.startswith(quote, i):
        end = s.find(quote, i + len(quote))
        if end < 0:
            raise GemmaSyntaxError("unterminated string")
        return s[i + len(quote) : end], end + len(quote)
    if i >= len(s):
        raise GemmaSyntaxError("missing value")
    c = s[i]
    if c == "{":
        obj: dict[str, Any] = {}
        i = _ws(s, i + 1)
        while not s.startswith("}", i):
            if s.startswith(quote, i):
                key, i = _read(s, i, quote)
            else:
                m = _BARE_KEY.match(s, i)
                if m is None:
                    raise GemmaSyntaxError("missing key")
                key, i = m.group().strip(), m.end()
            i = _ws(s, i)
            if not s.startswith(":", i):
                raise GemmaSyntaxError("missing ':' after a key")
            obj[key], i = _read(s, i + 1, quote)
            i = _ws(s, i)
            if s.startswith(",", i):
                i = _ws(s, i + 1)
            elif not s.startswith("}", i):
                raise GemmaSyntaxError("unterminated object")
        return obj, i + 1
    if c == "[":
        items: list[Any] = []
        i = _ws(s, i + 1)
        while not s.startswith("]", i):
            item, i = _read(s, i, quote)
            items.append(item)
            i = _ws(s, i)
            if s.startswith(",", i):
                i = _ws(s, i + 1)
            elif not s.startswith("]", i):
                raise GemmaSyntaxError("unterminated list")
        return items, i + 1
    m = _BARE_TOKEN.match(s, i)
    if m is None:
        raise GemmaSyntaxError(f"unexpected {c!r}")
    token = m.group().strip()
    if token in _WORDS:
        return _WORDS[token], m.end()
    if _NUMBER.fullmatch(token):
        value = float(token) if any(ch in token for ch in ".eE") else int(token)
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            raise GemmaSyntaxError("number out of range")
        return value, m.end()
    return token, m.end()  # a bare word: kept as text


def gemma_value(text: str, quote: str = QUOTE) -> Any:
    """The JSON value of a complete Gemma 4 literal; :class:`GemmaSyntaxError` if it does not read."""
    try:
        value, end = _read(text, 0, quote)
    except RecursionError:
        raise GemmaSyntaxError("nested too deeply") from None
    if _ws(text, end) != len(text):
        raise GemmaSyntaxError(f"unexpected text after a value: {text[end:][:20]!r}")
    return value


class Gemma4Args(KeywordArgs):
    """Scans ``key:value,…}`` (after a call's ``{``) for call ``index``; ``status`` becomes
    ``"done"`` at the closing brace, ``"broken"`` at an end marker inside the arguments,
    ``"failed"`` when the stream ended first."""

    __slots__ = ("_after_string", "_key_len", "_schema", "_string")

    #: The string quote and the call's end marker.
    quote: ClassVar[str] = QUOTE
    call_end: ClassVar[str] = CALL_END
    #: A key right after a top-level string value starts the next argument (no comma).
    implicit_comma: ClassVar[bool] = False

    def __init__(self, out: Emitter, index: int, schema: Any) -> None:
        super().__init__(out, index)
        self._schema = schema
        self._key_len = 0  # length of the raw text before the current value
        self._string = False
        self._after_string = False

    def _finish_value(self, value_text: str) -> None:
        key = self._key
        assert key is not None
        self._key = None
        if not self._failed:
            try:
                value = gemma_value(value_text, self.quote)
            except GemmaSyntaxError as exc:
                self._fail(f"argument {key!r} does not read: {exc}")
            else:
                if isinstance(value, str):
                    value = typed_value(value, parameter_schema(self._schema, key))
                self._members.member(key, value)
                self._raw.clear()
        self._flush_raw()

    def feed(self, text: str, pos: int, final: bool) -> int:
        """Scan ``text[pos:]``; returns where the arguments ended or where more text is needed."""
        n = len(text)
        raw = self._raw
        quote, call_end = self.quote, self.call_end
        while pos < n and self.status is None:
            if self._state is ArgPart.KEY:
                c = text[pos]
                if c in WS or c == ",":
                    j = max(_ws(text, pos), pos + 1)
                    raw.append(text[pos:j])
                    pos = j
                    continue
                if c == "}":
                    pos += 1
                    self._flush_raw()
                    if not self._failed:
                        self._members.close()
                        self.out.check_arguments(self.index)
                    self.status = "done"
                    break
                if text.startswith(call_end, pos):
                    self._broken()
                    break
                if c == "<" and not text.startswith(quote, pos):
                    rest = text[pos:]
                    if not final and (quote.startswith(rest) or call_end.startswith(rest)):
                        break
                    pos = self._malformed(text, pos, pos + 1)
                    continue
                if c == "<":
                    end = text.find(quote, pos + len(quote))
                    key = text[pos + len(quote) : end] if end >= 0 else ""
                    colon = _ws(text, end + len(quote)) if end >= 0 else n
                else:
                    m = _BARE_KEY.match(text, pos)
                    if m is None:
                        pos = self._malformed(text, pos, pos + 1)
                        continue
                    key, colon = m.group().strip(), m.end()
                if colon >= n:
                    if not final and n - pos < LOOKAHEAD:
                        break
                    pos = self._malformed(text, pos, n)
                    continue
                if text[colon] != ":" or not key:
                    pos = self._malformed(text, pos, max(colon, pos + 1))
                    continue
                self._key = key
                raw.append(text[pos : colon + 1])
                self._key_len = sum(map(len, raw))
                pos = colon + 1
                self._state = ArgPart.VALUE
                continue
            # value
            if self._string:
                end = text.find(quote, pos)
                if end < 0:
                    stop = n - (0 if final else _held_quote(text, pos, quote))
                    raw.append(text[pos:stop])
                    if stop == pos:
                        break
                    pos = stop
                    continue
                raw.append(text[pos : end + len(quote)])
                pos = end + len(quote)
                self._string = False
                self._after_string = self.implicit_comma and self._depth == 0
                continue
            if self._after_string:
                j = _ws(text, pos)
                if j >= n and not final:
                    break
                self._after_string = False
                if j < n and text[j] not in ",}" and not text.startswith(call_end, j):
                    # ``a:<escape>x<escape>b:…``: the string ended the value
                    self._finish_value("".join(raw)[self._key_len :])
                    self._state = ArgPart.KEY
                    continue
            m = _SPECIAL.search(text, pos)
            stop = n if m is None else m.start()
            if stop > pos:
                raw.append(text[pos:stop])
                pos = stop
                continue
            c = text[pos]
            if c == "<":
                if text.startswith(quote, pos):
                    raw.append(quote)
                    pos += len(quote)
                    self._string = True
                    continue
                if text.startswith(call_end, pos):
                    self._broken()
                    break
                if not final and (quote.startswith(text[pos:]) or call_end.startswith(text[pos:])):
                    break
            elif c in "{[":
                self._depth += 1
            elif c in "}]" and self._depth > 0:
                self._depth -= 1
            elif c in ",}" and self._depth == 0:
                value_text = "".join(raw)[self._key_len :]
                self._finish_value(value_text)
                self._state = ArgPart.KEY
                continue  # the key state consumes the "," or "}"
            raw.append(c)
            pos += 1
        if final and self.status is None:
            self.close()
        return pos

    def _malformed(self, text: str, start: int, end: int) -> int:
        """Text where a key should be: flag the call; the text stays raw. Returns ``end``."""
        self._fail("malformed arguments")
        self._raw.append(text[start:end])
        self._flush_raw()
        return end

    def _broken(self) -> None:
        """The end marker inside the arguments: the call is cut short."""
        self._fail("arguments end without '}'")
        self._flush_raw()
        self.status = "broken"

    def close(self) -> None:
        """End of stream before the closing brace: the call is truncated."""
        if self.status is None:
            self._fail("truncated")
            self._flush_raw()
            self.status = "failed"


def _held_quote(text: str, start: int, quote: str = QUOTE) -> int:
    n = len(text)
    for k in range(min(len(quote) - 1, n - start), 0, -1):
        if quote.startswith(text[n - k :]):
            return k
    return 0


class _Gemma4(State):
    """States of :class:`Gemma4Parser` beyond :class:`~.blocks.Block`."""

    LEAD = auto()  # where the answer starts: a bare ``call:NAME{``?
    CHANNEL = auto()  # after ``<|channel>``: the channel name
    THOUGHT = auto()  # a thought, up to ``<channel|>``
    HEAD = auto()  # ``call:NAME{``
    ARGS = auto()  # the arguments
    CLOSE = auto()  # the end marker


class Gemma4Parser(BlockParser):
    """``<|tool_call>call:NAME{…}<tool_call|>`` calls in the text (see module doc).

    States besides :class:`~.blocks.BlockParser`'s ``TEXT`` and ``JUNK``: :class:`_Gemma4`.
    """

    states = _Gemma4

    name = "gemma4"
    special_markers: ClassVar[tuple[str, ...]] = (CALL_START, CALL_END, CHANNEL_START, CHANNEL_END)
    starts: ClassVar[Mapping[str, State]] = {
        CALL_START: _Gemma4.HEAD,
        CHANNEL_START: _Gemma4.CHANNEL,
    }
    end = CALL_END

    def __init__(self, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]) -> None:
        super().__init__(out, budget, options)
        self.args: Gemma4Args | None = None
        self._thought_ws = ""  # trailing whitespace of a thought, held back
        self._thought_lead = True
        self._thoughts = 0  # thoughts with text so far (a later one is set apart by a blank line)
        self.state = _Gemma4.LEAD

    def _s_channel(self) -> bool:
        """After ``<|channel>``: the channel name ``thought`` is markup (a thought between calls)."""
        rest = self.buf[self.pos : self.pos + len(THOUGHT)]
        if rest == THOUGHT:
            self.pos += len(THOUGHT)
        elif THOUGHT.startswith(rest) and not self.final:
            return False
        self._thought_ws, self._thought_lead = "", True
        self.state = _Gemma4.THOUGHT
        return True

    def _s_thought(self) -> bool:
        """A thought's text, up to ``<channel|>``: reasoning, without the whitespace around it."""
        end, marker, resume = self.end_set(CHANNEL_END).split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        text = self.buf[self.pos : end]
        self.pos = resume
        if self._thought_lead:
            text = text.lstrip(WS)
            self._thought_lead = not text
            if text:
                self._thought_ws = "\n\n" if self._thoughts or self.out.calls else ""
                self._thoughts += 1
        body = text.rstrip(WS)
        if body:
            self.out.reasoning(self._thought_ws + body)
            self._thought_ws = text[len(body) :]
        else:
            self._thought_ws += text
        if marker is None and not self.final:
            return False
        self.state = _Gemma4.LEAD
        return marker is not None

    def _s_lead(self) -> bool:
        """Where the answer starts (the output's start, after a thought): a bare ``call:NAME{``
        — Gemma 4 sometimes drops ``<|tool_call>`` right after its thought — is a call."""
        buf = self.buf
        at = _ws(buf, self.pos)
        m = _BARE_HEAD.match(buf, at)
        if m is not None:
            self._open_call(m.group(1), m.end())
            return True
        rest = buf[at:]
        maybe = _HEAD_PREFIX.fullmatch(rest) and not rest.startswith(":")
        if maybe and not self.final and len(rest) < LOOKAHEAD:
            return False
        self.state = Block.TEXT
        return True

    #: The arguments scanner (its quote and end marker).
    args_class: ClassVar[type[Gemma4Args]] = Gemma4Args

    def _open_call(self, name: str, at: int) -> None:
        index = self.out.start_call(name)
        self.args = self.args_class(self.out, index, self.out.tool_schema(name))
        self.pos = at
        self.state = _Gemma4.ARGS

    def _s_head(self) -> bool:
        buf, pos = self.buf, self.pos
        m = _HEAD.match(buf, pos)
        if m is None:
            rest = buf[pos:]
            if not self.final and len(rest) < LOOKAHEAD and _HEAD_PREFIX.fullmatch(rest):
                return False
            decided = self._braceless_head()
            if decided is not None:
                return decided
            if not rest.strip() and self.final:
                self.end_block()  # a start marker at the very end: markup
                return True
            self.junk_index = self.out.start_call("", error="not a tool call")
            self.state = Block.JUNK
            return True
        self._open_call(m.group(1), m.end())
        return True

    def _braceless_head(self) -> bool | None:
        """``call:NAME`` (or ``:NAME``) then the end marker, no arguments: the call ``NAME``
        with none, as vLLM reads it (flagged when NAME is not a name, e.g. holds spaces).
        ``False`` while undecided, ``None`` when the head is not one."""
        buf, pos = self.buf, self.pos
        head = _BRACELESS_HEAD.match(buf, pos)
        if head is None:
            return None
        end, marker, resume = self.end_set(self.end or "").split(buf, pos, self.real)
        if end > head.end() or end - pos > LOOKAHEAD:
            return None  # a brace (or too much text) before the end marker
        if marker is None:
            return None if self.final or len(buf) - pos >= LOOKAHEAD else False
        name = re.sub(r"^:?call:|^:", "", buf[pos:end]).strip()
        valid = _NAME.fullmatch(name) is not None
        index = self.out.start_call(name, error=None if valid else "malformed call head")
        self.out.args(index, "{}")
        self.pos = resume
        self.end_block()
        return True

    def _s_args(self) -> bool:
        args = self.args
        assert args is not None
        self.pos = args.feed(self.buf, self.pos, self.final)
        if args.status is None:
            return False
        self.args = None
        self.state = _Gemma4.CLOSE
        return True

    def _s_close(self) -> bool:
        hit = self.at_marker(self.end)
        if hit is None:
            return False
        self.end_block()  # without the end marker the text goes on as content
        return True

    def close(self) -> None:
        if self.args is not None:
            self.args.close()
            self.args = None


class _Gemma4Think(State):
    """States of :class:`Gemma4Reasoning` beyond :class:`~.reasoning.Think`."""

    CHANNEL = auto()  # the channel name after ``<|channel>``


class Gemma4Reasoning(ThinkParser):
    """``<|channel>thought\\n…<channel|>``: the channel name is markup, the rest reasoning."""

    states = _Gemma4Think

    name = "gemma4"
    open_marker: ClassVar[str] = CHANNEL_OPEN
    close_marker: ClassVar[str] = CHANNEL_CLOSE
    special_markers: ClassVar[tuple[str, ...]] = (CHANNEL_OPEN, CHANNEL_CLOSE)
    openers: ClassVar[tuple[tuple[str, State], ...]] = ((CHANNEL_OPEN, _Gemma4Think.CHANNEL),)
    channel: ClassVar[str] = "thought"

    def _s_channel(self) -> bool:
        rest = self.buf[self.pos : self.pos + len(self.channel)]
        if rest == self.channel:
            self.pos += len(self.channel)
        elif self.channel.startswith(rest) and not self.final:
            return False
        self.state = Think.REASONING
        return True


class FunctionGemmaArgs(Gemma4Args):
    """FunctionGemma's arguments: Gemma 4's literals with ``<escape>`` as the string quote; a
    key right after a string value starts the next argument even without a comma (vLLM's
    streaming cases write ``city:<escape>NYC<escape>unit:…``)."""

    __slots__ = ()

    quote = ESCAPE
    call_end = END_FUNCTION_CALL
    implicit_comma = True


class FunctionGemmaParser(Gemma4Parser):
    """FunctionGemma: ``<start_function_call>call:NAME{key:<escape>text<escape>,n:1}<end_function_call>``.

    The arguments read as Gemma 4's (:class:`FunctionGemmaArgs`); a string value is
    converted to the type the tool's schema declares (vLLM converts ``<escape>42<escape>``
    to 42 without a schema; chatfmt keeps it text there). No reasoning channel.
    """

    name = "functiongemma"
    special_markers: ClassVar[tuple[str, ...]] = (START_FUNCTION_CALL, END_FUNCTION_CALL)
    starts: ClassVar[Mapping[str, State]] = {START_FUNCTION_CALL: _Gemma4.HEAD}
    end = END_FUNCTION_CALL
    args_class = FunctionGemmaArgs
