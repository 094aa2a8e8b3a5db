"""OpenAI gpt-oss output in the Harmony format: messages on channels, calls addressed by recipient.

The generation prompt ends with ``<|start|>assistant``, so the output starts
inside the first message's header. Each message is ``header<|message|>body``
and ends at ``<|end|>`` (or ``<|call|>`` / ``<|return|>``, the turn's end); the
next one opens with ``<|start|>assistant`` and its own header. A header holds
the channel (``<|channel|>analysis``), the recipient (``to=functions.NAME``,
written before or after the channel) and the content type (``<|constrain|>json``
or a bare ``json``/``code``). The body goes, by header:

* recipient ``functions.NAME`` → a tool call ``NAME`` whose arguments are the
  body (streamed as written, scanned as JSON); empty body → ``{}``;
* recipient ``python`` → a code-interpreter call (the body is the code);
* any other recipient (a built-in tool such as ``browser.search``) → a tool
  call named as written (flagged unknown when ``tools`` are given without it);
* channel ``analysis`` (no recipient) → ``reasoning_content``;
* ``final``, ``commentary`` without recipient (preambles), no channel, or
  output without any header → ``content``.

A message of another role (the model writing the tool's answer, or the user's
next turn) is kept verbatim as content. Headers, ``<|start|>`` and ``<|end|>``
are markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import auto
from typing import Any

from ...parsing.base import Emitter, FormatParser
from ...parsing.json_stream import JsonScanner
from ...parsing.markers import MarkerSet, marker_set
from ...parsing.special import SpecialTokens
from ...parsing.states import State, StateMachine
from .markers import CALL, CHANNEL, CONSTRAIN, END, MESSAGE, RETURN, START

START, END, MESSAGE = START, END, MESSAGE
CHANNEL, CONSTRAIN = CHANNEL, CONSTRAIN
CALL, RETURN = CALL, RETURN

#: What ends a message body (``<|start|>`` too: a model that skips ``<|end|>``).
_BODY_END = (END, CALL, RETURN, START)
#: Markers that may open a header where a message can begin.
_HEADER_OPENERS = (CHANNEL, CONSTRAIN, MESSAGE)
#: A header longer than this without ``<|message|>`` is not a header (its text is content).
MAX_HEADER = 512
#: Leading spaces allowed before a ``to=`` header at the start of a message.
_MAX_LEAD = 8
_FUNCTIONS = "functions."


class Harmony(State):
    """Where the parser is in the message sequence."""

    BETWEEN = auto()  # before a message (the output's start, or after <|end|>)
    HEADER = auto()  # reading a header up to <|message|>
    TEXT = auto()  # a content / reasoning body
    ARGS = auto()  # a function call's arguments
    CODE = auto()  # a python (code-interpreter) call's code
    FOREIGN = auto()  # another role's message, kept verbatim as content


class HarmonyParser(StateMachine, FormatParser):
    """See module doc."""

    states = Harmony

    name = "harmony"
    #: ``<|call|>`` and ``<|return|>`` are not listed: they end the turn (the
    #: end-of-turn layer's markers); the parser still ends a body there when it
    #: is used without a template.
    special_markers = (START, END, MESSAGE, CHANNEL, CONSTRAIN)
    code_calls = True

    def __init__(self, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]) -> None:
        super().__init__(out, budget, options)
        self.state = Harmony.BETWEEN
        self._role_given = False  # the header follows <|start|> (so it names its role)
        self._reasoning = False  # the TEXT body is reasoning
        self._index = -1
        self._lead = True  # no argument text other than whitespace yet
        self._scanner: JsonScanner | None = None

    def _markers(self, *markers: str) -> MarkerSet:
        return marker_set(markers, frozenset((*self.special_markers, CALL, RETURN)))

    # ------------------------------------------------------------------ between messages
    def _marker_at(self, pos: int, markers: tuple[str, ...]) -> str | None:
        """The real marker of ``markers`` at ``pos``: ``""`` if none, None if undecided yet."""
        buf = self.buf
        for marker in markers:
            if buf.startswith(marker, pos):
                if self.real(marker, pos):
                    return marker
            elif not self.final and marker.startswith(buf[pos : pos + len(marker)]):
                return None
        return ""

    def _s_between(self) -> bool:
        buf, pos, n = self.buf, self.pos, len(self.buf)
        if pos >= n:
            return False
        p = pos
        while p < n and p - pos <= _MAX_LEAD and buf[p] in " \t\r\n":
            p += 1
        if p == n and not self.final and p - pos <= _MAX_LEAD:
            return False
        found = self._marker_at(p, (*_BODY_END, *_HEADER_OPENERS)) if p < n else ""
        if found is None:
            return False
        if found in _BODY_END:  # <|start|> opens a header; a stray end marker is markup
            self.pos = p + len(found)
            if found == START:
                self._enter_header(role_given=True)
            return True
        if found:
            self.pos = p
            self._enter_header(role_given=False)
            return True
        if buf.startswith("to=", p):  # a recipient first: `` to=functions.f<|channel|>…``
            self.pos = p
            self._enter_header(role_given=False)
            return True
        if n - p < 3 and "to=".startswith(buf[p:]) and not self.final:
            return False
        # no header: the model writes its answer directly
        self._reasoning = False
        self.state = Harmony.TEXT
        return True

    def _enter_header(self, *, role_given: bool) -> None:
        self._role_given = role_given
        self.state = Harmony.HEADER

    # ------------------------------------------------------------------ header
    def _s_header(self) -> bool:
        end, marker, resume = self._markers(MESSAGE, *_BODY_END).split(
            self.buf, self.pos, self.real
        )
        if end - self.pos > MAX_HEADER:  # not a header: its text is content
            self.out.content(self._header_text(self.buf[self.pos : end]))
            self.pos = end
            self._reasoning = False
            self.state = Harmony.TEXT
            return True
        if marker is None:
            if not self.final:
                return False
            # the stream ended inside a header
            header = self.buf[self.pos :]
            self.pos = len(self.buf)
            role, recipient, _ = _read_header(header, self._role_given)
            if role != "assistant":
                self.out.content(self._header_text(header))
            elif recipient:  # the call was cut before its arguments
                index = self._open_call(recipient)
                if index >= 0:
                    self.out.fail(index, "truncated")
            return False
        header = self.buf[self.pos : end]
        self.pos = resume
        role, recipient, channel = _read_header(header, self._role_given)
        if role != "assistant":
            self.out.content(self._header_text(header) + (MESSAGE if marker == MESSAGE else ""))
            self.state = Harmony.FOREIGN
            if marker != MESSAGE:
                self._after_body(marker)
            return True
        self._open_body(recipient, channel)
        if marker != MESSAGE:  # a header without a body: an empty message
            self._close_body(marker)
        return True

    def _header_text(self, header: str) -> str:
        return (START if self._role_given else "") + header

    def _open_call(self, recipient: str) -> int:
        """Start the call a recipient names; -1 for a code call (no arguments)."""
        if recipient == "python":
            self._index = self.out.start_call("python", code=True)
            self.state = Harmony.CODE
            return -1
        name = recipient[len(_FUNCTIONS) :] if recipient.startswith(_FUNCTIONS) else recipient
        self._index = self.out.start_call(name, error=None if name else "no tool name")
        self._lead = True
        self._scanner = JsonScanner()
        self.state = Harmony.ARGS
        return self._index

    def _open_body(self, recipient: str | None, channel: str | None) -> None:
        if recipient:
            self._open_call(recipient)
            return
        self._reasoning = channel == "analysis"
        self.state = Harmony.TEXT

    # ------------------------------------------------------------------ bodies
    def _body(self) -> tuple[str, str | None]:
        """The body text decided so far (consumed) and the marker that ended it, if any."""
        end, marker, resume = self._markers(*_BODY_END).split(self.buf, self.pos, self.real)
        if marker is None and self.final:
            end = resume = len(self.buf)
        text = self.buf[self.pos : end]
        self.pos = resume
        return text, marker

    def _after_body(self, marker: str | None) -> None:
        self.state = Harmony.BETWEEN
        if marker == START:
            self._enter_header(role_given=True)

    def _s_text(self) -> bool:
        text, marker = self._body()
        if self._reasoning and self.state is Harmony.TEXT:
            self.out.reasoning(text)
        else:
            self.out.content(text)
        if marker is None:
            return False
        if marker == END:  # a text message ended: its trailing whitespace is its own
            self.out.close_text()
        self._after_body(marker)
        return True

    #: Another role's message: its body is content, as a text body's (never reasoning).
    _s_foreign = _s_text

    def _s_code(self) -> bool:
        text, marker = self._body()
        self.out.code(self._index, text)
        if marker is None:
            return False
        self._after_body(marker)
        return True

    def _s_args(self) -> bool:
        """Arguments: a JSON value (markers inside its strings are text), then up to the
        message end; text that is not JSON runs to the next marker that ends a message."""
        if self._lead and not self.skip_ws():
            if self.final:
                self._close_body(None)
                return True
            return False
        scanner = self._scanner
        assert scanner is not None
        if not (scanner.done or scanner.failed):
            stop = scanner.feed(self.buf, self.pos)
            if not scanner.failed:
                self._args(self.buf[self.pos : stop])
                self.pos = stop
                if not scanner.done:
                    if self.final:
                        self._close_body(None)
                        return True
                    return False
        text, marker = self._body()
        self._args(text)
        if marker is None and not self.final:
            return False
        self._close_body(marker)
        return True

    def _args(self, text: str) -> None:
        if text:
            self._lead = False
            self.out.args(self._index, text)

    def _close_body(self, marker: str | None) -> None:
        """End the current message (``marker`` None: the stream ended inside it)."""
        if self.state is Harmony.ARGS:
            scanner = self._scanner
            assert scanner is not None
            if self._lead:  # no arguments at all
                self.out.args(self._index, "{}")
            else:
                scanner.close()
                if marker is None and scanner.error == "truncated":
                    self.out.fail(self._index, "truncated")
                else:
                    self.out.check_arguments(self._index)
            self._scanner = None
        self._after_body(marker)


def _read_header(header: str, role_given: bool) -> tuple[str, str | None, str | None]:
    """``(role, recipient, channel)`` of a header (``role`` is "assistant" when implicit)."""
    header = header.split(CONSTRAIN, 1)[0]
    before, _, after = header.partition(CHANNEL)
    role = "assistant"
    recipient: str | None = None
    channel: str | None = None
    words = before.split()
    if role_given and words and not words[0].startswith("to="):
        role = words.pop(0)
    for i, word in enumerate(after.split()):
        if word.startswith("to="):
            recipient = word[3:]
        elif i == 0:
            channel = word
    for word in words:
        if word.startswith("to="):
            recipient = word[3:]
    return role, recipient, channel
