"""Incremental JSON scanning: know where a JSON value ends without re-parsing.

:class:`JsonScanner` follows one JSON value chunk by chunk (strings, escapes,
nesting, literals) and reports where it ends or where it stops being JSON. It
keeps a constant-size state plus the container stack, so a stream is scanned in
linear time; string bodies are skipped with a regular expression.

:class:`CallObject` scans a tool-call object such as
``{"name": "f", "arguments": {...}}`` and reports the name and the raw text of
the arguments value as it streams (the model's own text, never re-serialized).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from .base import WS

_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_LITERAL_RUN = re.compile(r"[0-9A-Za-z+\-.]*")
_LITERAL_OK = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = frozenset('"\\/bfnrt')

# Scanner states: plain ints, not an Enum (see .states) — the scanner's loop tests them for
# every character it does not skip with a regular expression, the hottest loop of parsing.
(
    _VALUE,
    _VALUE_OR_CLOSE,
    _AFTER,
    _KEY_OR_END,
    _KEY,
    _COLON,
    _STRING,
    _ESCAPE,
    _UNICODE,
    _LITERAL,
    _DONE,
    _ERROR,
) = range(12)


class JsonScanner:
    """Follows one JSON value through successive chunks.

    :meth:`feed` returns the position in the chunk where scanning stopped: the end
    of the chunk, just past the end of the value (``done``), or the offending
    character (``error`` is then set). A top-level number is only known to be
    complete at the next non-number character or at :meth:`close`.
    """

    __slots__ = ("_after_string", "_hex_left", "_literal", "_stack", "_state", "error")

    def __init__(self) -> None:
        self._stack: list[str] = []
        self._state = _VALUE
        self._after_string = _AFTER
        self._literal: list[str] = []
        self._hex_left = 0
        self.error: str | None = None

    @property
    def done(self) -> bool:
        return self._state == _DONE

    @property
    def failed(self) -> bool:
        return self._state == _ERROR

    @property
    def started(self) -> bool:
        return self._state != _VALUE or bool(self._stack)

    def _fail(self, reason: str) -> None:
        self._state = _ERROR
        self.error = reason

    def _value_end(self) -> None:
        self._state = _AFTER if self._stack else _DONE

    def _end_literal(self) -> bool:
        text = "".join(self._literal)
        self._literal.clear()
        if _LITERAL_OK.fullmatch(text) is None:
            self._fail(f"invalid literal {text[:20]!r}")
            return False
        self._value_end()
        return True

    def close(self) -> None:
        """End of input: complete a pending top-level literal, or mark the value truncated."""
        if self._state == _LITERAL and not self._stack:
            self._end_literal()
        elif self._state not in (_DONE, _ERROR):
            self._fail("truncated")

    def feed(self, text: str, pos: int = 0) -> int:
        """Scan ``text[pos:]``; return where scanning stopped (see class doc)."""
        n = len(text)
        stack = self._stack
        while pos < n:
            state = self._state
            if state == _STRING:
                pos = _STRING_RUN.match(text, pos).end()  # type: ignore[union-attr]
                if pos >= n:
                    break
                c = text[pos]
                pos += 1
                if c == '"':
                    self._state = self._after_string
                    if self._after_string == _AFTER and not stack:
                        self._state = _DONE
                        return pos
                elif c == "\\":
                    self._state = _ESCAPE
                else:
                    self._fail("control character in string")
                    return pos - 1
                continue
            c = text[pos]
            if state == _ESCAPE:
                if c == "u":
                    self._state, self._hex_left = _UNICODE, 4
                elif c in _ESCAPES:
                    self._state = _STRING
                else:
                    self._fail(f"invalid escape \\{c}")
                    return pos
                pos += 1
            elif state == _UNICODE:
                if c not in _HEX:
                    self._fail("invalid \\u escape")
                    return pos
                self._hex_left -= 1
                if not self._hex_left:
                    self._state = _STRING
                pos += 1
            elif state == _LITERAL:
                end = _LITERAL_RUN.match(text, pos).end()  # type: ignore[union-attr]
                self._literal.append(text[pos:end])
                pos = end
                if pos < n:
                    if not self._end_literal():
                        return pos
                    if self._state == _DONE:
                        return pos
            elif c in WS:
                pos += 1
            elif state in (_VALUE, _VALUE_OR_CLOSE):
                pos += 1
                if c == "{":
                    stack.append("}")
                    self._state = _KEY_OR_END
                elif c == "[":
                    stack.append("]")
                    self._state = _VALUE_OR_CLOSE
                elif c == '"':
                    self._state, self._after_string = _STRING, _AFTER
                elif c == "-" or c.isalnum():
                    self._state = _LITERAL
                    self._literal.append(c)
                elif c == "]" and state == _VALUE_OR_CLOSE:
                    stack.pop()
                    self._value_end()
                    if self._state == _DONE:
                        return pos
                else:
                    self._fail(f"unexpected {c!r}")
                    return pos - 1
            elif state == _AFTER:
                pos += 1
                if c == ",":
                    self._state = _KEY if stack[-1] == "}" else _VALUE
                elif c == stack[-1]:
                    stack.pop()
                    self._value_end()
                    if self._state == _DONE:
                        return pos
                else:
                    self._fail(f"unexpected {c!r}")
                    return pos - 1
            elif state in (_KEY_OR_END, _KEY):
                pos += 1
                if c == '"':
                    self._state, self._after_string = _STRING, _COLON
                elif c == "}" and state == _KEY_OR_END:
                    stack.pop()
                    self._value_end()
                    if self._state == _DONE:
                        return pos
                else:
                    self._fail(f"expected a key, got {c!r}")
                    return pos - 1
            elif state == _COLON:
                pos += 1
                if c != ":":
                    self._fail(f"expected ':', got {c!r}")
                    return pos - 1
                self._state = _VALUE
            else:  # _DONE / _ERROR
                return pos
        return pos


def loads_or_none(text: str) -> tuple[bool, Any]:
    """``(True, value)`` if ``text`` is valid JSON, else ``(False, None)``.

    JSON nested too deeply for the decoder counts as not valid (never a ``RecursionError``).
    """
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


# CallObject states
(
    _C_START,
    _C_KEY_OR_END,
    _C_KEY,
    _C_KEY_ESCAPE,
    _C_COLON,
    _C_PRE_VALUE,
    _C_VALUE,
    _C_AFTER,
    _C_DONE,
    _C_ERROR,
) = range(10)


class CallObject:
    """Scans one tool-call JSON object incrementally.

    ``feed`` returns ``(stop_position, events)`` where events are
    ``("name", str)``, ``("args_start", None)``, ``("args", raw_text)``,
    ``("args_end", None)``, ``("id", str)``, ``("done", None)`` and ``("error", reason)``.
    Keys in ``name_keys`` give the tool name (a JSON string); the value of the
    first key in ``args_keys`` is the arguments, passed through as raw text; a string
    value of a key in ``id_keys`` is the call's id (other values of it are ignored).
    """

    __slots__ = (
        "_key",
        "_keybuf",
        "_role",
        "_state",
        "_value",
        "args_keys",
        "args_seen",
        "call_id",
        "id_keys",
        "name",
        "name_keys",
    )

    def __init__(
        self,
        name_keys: Collection[str] = ("name",),
        args_keys: Collection[str] = ("arguments", "parameters"),
        id_keys: Collection[str] = (),
    ) -> None:
        self.name_keys = name_keys
        self.args_keys = args_keys
        self.id_keys = id_keys
        self.call_id: str | None = None
        self._state = _C_START
        self._keybuf: list[str] = []
        self._key = ""
        self._value: JsonScanner | None = None
        self._role = ""  # "name", "args" or "other" for the value being scanned
        self.name: str | None = None
        self.args_seen = False

    @property
    def done(self) -> bool:
        return self._state == _C_DONE

    @property
    def failed(self) -> bool:
        return self._state == _C_ERROR

    @property
    def started(self) -> bool:
        return self._state != _C_START

    def close(self) -> list[tuple[str, Any]]:
        """End of input: the object is truncated unless it is complete."""
        if self._state in (_C_DONE, _C_ERROR):
            return []
        self._state = _C_ERROR
        return [("error", "truncated")]

    def _error(self, events: list[tuple[str, Any]], reason: str) -> None:
        self._state = _C_ERROR
        events.append(("error", reason))

    def feed(self, text: str, pos: int = 0) -> tuple[int, list[tuple[str, Any]]]:
        events: list[tuple[str, Any]] = []
        n = len(text)
        while pos < n:
            state = self._state
            if state == _C_VALUE:
                scanner = self._value
                assert scanner is not None
                start = pos
                pos = scanner.feed(text, pos)
                if self._role == "args":
                    if pos > start:
                        events.append(("args", text[start:pos]))
                elif self._role in ("name", "id"):
                    self._keybuf.append(text[start:pos])
                if scanner.failed:
                    self._error(events, f"invalid JSON in {self._key!r}: {scanner.error}")
                    return pos, events
                if scanner.done:
                    self._end_value(events)
                    if self._state == _C_ERROR:
                        return pos, events
                continue
            if state == _C_KEY:
                end = _STRING_RUN.match(text, pos).end()  # type: ignore[union-attr]
                if end > pos:
                    self._keybuf.append(text[pos:end])
                pos = end
                if pos >= n:
                    break
                c = text[pos]
                pos += 1
                if c == '"':
                    ok, key = loads_or_none('"' + "".join(self._keybuf) + '"')
                    self._keybuf.clear()
                    if not ok:
                        self._error(events, "invalid key")
                        return pos, events
                    self._key = key
                    self._state = _C_COLON
                elif c == "\\":
                    self._keybuf.append("\\")
                    self._state = _C_KEY_ESCAPE
                else:
                    self._error(events, "control character in key")
                    return pos - 1, events
                continue
            c = text[pos]
            if state == _C_KEY_ESCAPE:
                self._keybuf.append(c)
                self._state = _C_KEY
                pos += 1
                continue
            if c in WS:
                pos += 1
                continue
            pos += 1
            if state == _C_START:
                if c != "{":
                    self._error(events, f"expected '{{', got {c!r}")
                    return pos - 1, events
                self._state = _C_KEY_OR_END
            elif state == _C_KEY_OR_END:
                if c == '"':
                    self._state = _C_KEY
                elif c == "}":
                    self._state = _C_DONE
                    events.append(("done", None))
                    return pos, events
                else:
                    self._error(events, f"expected a key, got {c!r}")
                    return pos - 1, events
            elif state == _C_COLON:
                if c != ":":
                    self._error(events, f"expected ':', got {c!r}")
                    return pos - 1, events
                self._state = _C_PRE_VALUE
            elif state == _C_PRE_VALUE:
                pos -= 1  # the value starts here: let its scanner see this character
                self._start_value(events)
            elif state == _C_AFTER:
                if c == ",":
                    self._state = _C_KEY_OR_END
                elif c == "}":
                    self._state = _C_DONE
                    events.append(("done", None))
                    return pos, events
                else:
                    self._error(events, f"expected ',' or '}}', got {c!r}")
                    return pos - 1, events
            else:
                return pos - 1, events
        return pos, events

    def _start_value(self, events: list[tuple[str, Any]]) -> None:
        key = self._key
        if key in self.name_keys and self.name is None:
            self._role = "name"
        elif key in self.args_keys and not self.args_seen:
            self._role = "args"
            self.args_seen = True
            events.append(("args_start", None))
        elif key in self.id_keys and self.call_id is None:
            self._role = "id"
        else:
            self._role = "other"
        self._value = JsonScanner()
        self._state = _C_VALUE

    def _end_value(self, events: list[tuple[str, Any]]) -> None:
        if self._role == "name":
            raw = "".join(self._keybuf).strip()
            self._keybuf.clear()
            ok, value = loads_or_none(raw)
            if not ok or not isinstance(value, str):
                self._error(events, "tool name is not a string")
                return
            self.name = value
            events.append(("name", value))
        elif self._role == "args":
            events.append(("args_end", None))
        elif self._role == "id":
            ok, value = loads_or_none("".join(self._keybuf).strip())
            self._keybuf.clear()
            if ok and isinstance(value, str) and value:
                self.call_id = value
                events.append(("id", value))
        self._value = None
        self._state = _C_AFTER
