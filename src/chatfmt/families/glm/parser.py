"""ChatGLM3, GLM-4 and GLM-4.5/4.6 tool calls.

* ChatGLM3: each assistant segment starts with a metadata line (empty for text,
  a tool name, or ``interpreter``); a tool segment is
  ```` ```python\\ntool_call(k=v, …)\\n``` ````, turned into JSON arguments.
* GLM-4: metadata line = tool name, then the JSON arguments (``python`` = code).
* GLM-4.5/4.6: ``<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value>…</tool_call>``;
  a value is a string when the tool schema says so, else JSON when it parses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.blocks import Block, BlockParser, CodeBody, RawArgs
from ...parsing.json_stream import loads_or_none
from ...parsing.literals import KwargsCall
from ...parsing.states import State
from .markers import (
    ARG_KEY,
    ARG_KEY_CLOSE,
    ARG_VALUE,
    ARG_VALUE_CLOSE,
    ASSISTANT,
    TOOL_CALL,
    TOOL_CALL_CLOSE,
)

_ASSISTANT = ASSISTANT
_META = re.compile(r"[ \t]*([A-Za-z_][\w.\-]*)?[ \t]*")
_CODE_NAMES = ("interpreter", "python")
_MAX_LINE = 256


class _ChatGLM(State):
    """States of :class:`ChatGLM3Parser` beyond :class:`~.blocks.Block`."""

    META = auto()  # a segment's metadata line
    BODY = auto()  # after a tool-name line: a call or text
    FENCE = auto()  # the ```python line
    ARGS = auto()  # the arguments (JSON or ``tool_call(k=v, …)``)
    TAIL = auto()  # the closing fence


class ChatGLM3Parser(BlockParser):
    """Segments separated by ``<|assistant|>``, each with a metadata line (see module doc)."""

    states = _ChatGLM

    name = "chatglm3"
    code_calls = True
    special_markers = (_ASSISTANT,)
    starts: ClassVar[Mapping[str, State]] = {_ASSISTANT: _ChatGLM.META}
    #: How a tool segment's arguments are written.
    kwargs_form = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kwargs: KwargsCall | None = None
        self._meta = ""
        self._lstrip = False
        self._opening = True  # the metadata line that opens the reply comes next
        self._name = ""
        self._index = 0
        self.state = _ChatGLM.META

    def _s_meta(self) -> bool:
        m = _META.match(self.buf, self.pos)
        assert m is not None
        end = m.end()
        if end == len(self.buf) and not self.final and end - self.pos < _MAX_LINE:
            return False
        if end < len(self.buf) and self.buf[end] == "\n":
            meta = m.group(1) or ""
            self._meta = self.buf[self.pos : end + 1]
            if not meta and self._opening and self.out.separators.before_content:
                # the reply's first segment is text: its whitespace goes to the emitter,
                # which leaves out the template's own ("\n " / "\n"), keeps the model's
                # (without a template it is all markup, as the official parser strips it)
                self.pos = end
                self._opening = False
                self.state = Block.TEXT
                return True
            self._opening = False
            self.pos = end + 1
            if not meta:
                self._lstrip = True
                self.state = Block.TEXT
            elif meta in _CODE_NAMES:
                self.code = CodeBody(self.out, self.out.start_call("code_interpreter", code=True))
                self.state = Block.CODE
            else:
                self._name = meta
                self.state = _ChatGLM.BODY
            return True
        self._opening = False
        self.state = Block.TEXT  # no metadata line: plain text
        return True

    def _s_text(self) -> bool:
        if self._lstrip:
            if not self.skip_ws():
                return False
            self._lstrip = False
        return super()._s_text()

    def _s_body(self) -> bool:
        """After a tool-name line: decide whether a call follows."""
        start = self.pos
        if not self.skip_ws():
            self.pos = start
            if self.final:
                self.out.content(self._meta + self.buf[self.pos :])
                self.pos = len(self.buf)
                self.state = Block.TEXT
                return True
            return False
        rest = self.buf[self.pos : self.pos + 10]
        for opener in ("```", "tool_call(", "{"):
            if rest.startswith(opener):
                index = self.out.start_call(self._name)
                self.state = _ChatGLM.FENCE if opener == "```" else _ChatGLM.ARGS
                self._index = index
                return True
            if opener.startswith(rest) and not self.final:
                self.pos = start
                return False
        self.pos = start
        self.out.content(self._meta)  # not a call: the line was text
        self.state = Block.TEXT
        return True

    def _s_fence(self) -> bool:
        nl = self.buf.find("\n", self.pos)
        if nl < 0:
            if not self.final and len(self.buf) - self.pos < _MAX_LINE:
                return False
            nl = len(self.buf) - 1
        self.pos = nl + 1
        self.state = _ChatGLM.ARGS
        return True

    def _s_args(self) -> bool:
        if self.raw is None and self.kwargs is None:
            if not self.skip_ws():
                if self.final:
                    self.out.fail(self._index, "truncated")
                    self.state = Block.TEXT
                    return True
                return False
            rest = self.buf[self.pos : self.pos + 10]
            if rest.startswith("{"):
                self.raw = RawArgs(self.out, self._index)
            elif self.kwargs_form and rest.startswith("tool_call("):
                self.pos += len("tool_call(")
                self.kwargs = KwargsCall(self.out, self._index)
            elif "tool_call(".startswith(rest) and self.kwargs_form and not self.final:
                return False
            else:
                self.out.fail(self._index, "no arguments found")
                self.junk_index = self._index
                self.cur_end = _ASSISTANT
                self.state = Block.JUNK
                return True
        if self.raw is not None:
            self.pos = self.raw.feed(self.buf, self.pos)
            if self.raw.status is None and self.final:
                self.raw.close()
            if self.raw.status is None:
                return False
            self.raw = None
        else:
            assert self.kwargs is not None
            self.pos = self.kwargs.feed(self.buf, self.pos, self.final)
            if not self.kwargs.finished:
                return False
            self.kwargs = None
        self.state = _ChatGLM.TAIL
        return True

    def _s_tail(self) -> bool:
        """After the arguments: the closing fence, then text."""
        if not self.skip_ws():
            return False
        hit = self.at_marker("```")
        if hit is None:
            return False
        self.state = Block.TEXT
        return True

    def _s_code(self) -> bool:
        code = self.code
        assert code is not None
        end, marker, _resume = self.end_set(_ASSISTANT).split(self.buf, self.pos, self.real)
        last = marker is not None or self.final
        if self.final and marker is None:
            end = len(self.buf)
        code.feed(self.buf[self.pos : end], last)
        self.pos = end  # a following <|assistant|> starts the next segment
        if not last:
            return False
        self.code = None
        self.state = Block.TEXT
        return True


class GLM4Parser(ChatGLM3Parser):
    """GLM-4 (``glm-4-9b-chat``): tool name line, then the JSON arguments."""

    name = "glm4"
    kwargs_form = False


# ---------------------------------------------------------------------- GLM-4.5
_TC, _TC_END = TOOL_CALL, TOOL_CALL_CLOSE
_K, _K_END, _V, _V_END = ARG_KEY, ARG_KEY_CLOSE, ARG_VALUE, ARG_VALUE_CLOSE
_MALFORMED = "malformed <arg_key>/<arg_value> pairs"


def _decode_value(raw: str, schema_type: Any) -> Any:
    """An ``<arg_value>``: the text for string parameters, else JSON when it parses."""
    if schema_type == "string":
        return raw
    ok, value = loads_or_none(raw)
    if ok:
        return value
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        ok, value = loads_or_none(text)
        return value if ok else text[1:-1]
    if '\\"' in text:  # JSON written with escaped quotes (e.g. [{\"a\": 1}])
        ok, unescaped = loads_or_none('"' + text + '"')
        if ok:
            ok, value = loads_or_none(unescaped)
            if ok:
                return value
    return raw


class GLM45State(State):
    """States of :class:`GLM45Parser` beyond :class:`~.blocks.Block`."""

    NAME = auto()  # the tool name
    PAIRS = auto()  # between key/value pairs
    KEY = auto()
    VALUE_HEAD = auto()  # between a key and its value
    VALUE = auto()


class GLM45Parser(BlockParser):
    """GLM-4.5 / 4.6 ``<tool_call>`` blocks with ``<arg_key>``/``<arg_value>`` pairs."""

    states = GLM45State

    name = "glm45"
    special_markers = (_TC, _TC_END, _K, _K_END, _V, _V_END)
    starts: ClassVar[Mapping[str, State]] = {_TC: GLM45State.NAME}
    end = _TC_END
    #: The pair markers (a parser derived from a template with another spelling sets them).
    key_open: ClassVar[str] = _K
    key_close: ClassVar[str] = _K_END
    value_open: ClassVar[str] = _V
    value_close: ClassVar[str] = _V_END

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._index = 0
        self._first = True
        self._key = ""
        self._name = ""

    @property
    def _call_close(self) -> str:
        return self.end or ""

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self._parts = []

    def _schema_type(self, key: str) -> Any:
        schema = self.out.tool_schema(self._name)
        if isinstance(schema, dict):
            prop = (schema.get("properties") or {}).get(key)
            if isinstance(prop, dict):
                return prop.get("type")
        return None

    def _s_name(self) -> bool:
        if not self.skip_ws():
            if self.final:
                self.end_block()
                return True
            return False
        end, marker, resume = self.end_set(self.key_open, self._call_close, "\n").split(
            self.buf, self.pos, self.real
        )
        if marker is None and not self.final and len(self.buf) - self.pos < _MAX_LINE:
            return False
        if marker is None:
            end = resume = len(self.buf)
        name = self.buf[self.pos : end].strip()
        while name.endswith("\\n"):
            name = name[:-2].rstrip()
        if not name:
            if marker is None:  # nothing but the marker: no call
                self.pos = resume
                self.end_block()
                return True
            self.junk_index = self.out.start_call("", error="no tool name")
            self.state = Block.JUNK
            return True
        if marker is None:  # the stream ended inside the name line: the name may be cut
            index = self.out.start_call(name, error="truncated")
            self.out.args(index, "")
            self.pos = resume
            self.end_block()
            return True
        self._name = name
        self._index = self.out.start_call(name)
        self._first = True
        self.pos = end if marker != "\n" else resume
        self.state = GLM45State.PAIRS
        return True

    def skip_gap(self) -> bool:
        """Skip whitespace and literal ``\\n`` (GLM-4.6 sometimes writes escapes); False at buffer end."""
        while True:
            if not self.skip_ws():
                return False
            if self.buf.startswith("\\n", self.pos):
                self.pos += 2
                continue
            # a lone backslash at the end may be the start of a literal \n
            return not (
                self.buf[self.pos] == "\\" and self.pos + 1 == len(self.buf) and not self.final
            )

    def _s_pairs(self) -> bool:
        if not self.skip_gap():
            if self.final:
                return self._close_call()
            return False
        found = self.at_any(self.key_open, self._call_close)
        if found is None:
            return False
        if found == self._call_close:
            return self._close_call()
        if found:
            self._parts = []
            self.state = GLM45State.KEY
            return True
        if self.final:  # the stream ends here, after complete pairs
            rest = self.buf[self.pos :]
            if self._call_close.startswith(rest):
                # "</tool_c": the call is complete and the cut tag its closing markup (Ollama's
                # TestGLM46ParserFinalizesCompleteToolCallOnDone: it never becomes content)
                self.pos = len(self.buf)
                return self._close_call()
            if self.key_open.startswith(rest):  # "<arg_k": a further argument was cut off
                return self._broken("truncated")
        return self._broken()

    def _close_call(self) -> bool:
        self.out.args(self._index, "{}" if self._first else "}")
        self.out.check_arguments(self._index)
        self.end_block()
        return True

    def _broken(self, reason: str = _MALFORMED) -> bool:
        """Flag the call (its text so far stays its arguments); the rest of the block is junk."""
        self.out.fail(self._index, reason)
        self.junk_index = self._index
        self.state = Block.JUNK
        return True

    def _collect(self, closing: str) -> bool | None:
        """Gather text up to ``closing``; True when found, None when waiting, False if broken."""
        # A value ends only at </arg_value> (values are raw text and may contain other markers).
        breakers = (
            (closing,)
            if closing == self.value_close
            else (closing, self._call_close, self.key_open, self.value_open)
        )
        end, marker, resume = self.end_set(*breakers).split(self.buf, self.pos, self.real)
        if marker is None and self.final:
            end = len(self.buf)
        self._parts.append(self.buf[self.pos : end])
        self.pos = end
        if marker is None:
            return False if self.final else None
        if marker != closing:
            return False
        self.pos = resume
        return True

    def _s_key(self) -> bool:
        got = self._collect(self.key_close)
        if got is None:
            return False
        if not got:
            self._junk_parts(self.key_open)
            return self._broken("truncated" if self.pos == len(self.buf) else _MALFORMED)
        self._key = "".join(self._parts).strip()
        self._parts = []
        self.state = GLM45State.VALUE_HEAD
        return True

    def _junk_parts(self, opener: str) -> None:
        self.out.args(self._index, opener + "".join(self._parts))
        self._parts = []

    def _s_value_head(self) -> bool:
        if not self.skip_gap():
            if self.final:
                self.out.args(self._index, self.key_open + self._key + self.key_close)
                return self._broken("truncated")
            return False
        hit = self.at_marker(self.value_open)
        if hit is None:
            return False
        if not hit:
            self.out.args(self._index, self.key_open + self._key + self.key_close)
            cut = self.final and self.value_open.startswith(self.buf[self.pos :])
            return self._broken("truncated" if cut else _MALFORMED)
        self.state = GLM45State.VALUE
        return True

    def _s_value(self) -> bool:
        if self.final and self._cut_in_value_end():
            return True
        got = self._collect(self.value_close)
        if got is None:
            return False
        if not got:
            self._junk_parts(self.key_open + self._key + self.key_close + self.value_open)
            return self._broken("truncated")
        self._pair()
        self.state = GLM45State.PAIRS
        return True

    def _cut_in_value_end(self) -> bool:
        """At the end of the stream: a value followed by a cut ``</arg_value>`` (at least ``</``)
        is complete — the call is closed; the cut tag is its closing markup, not content."""
        end, marker, _ = self.end_set(self.value_close).split(self.buf, self.pos, self.real)
        if marker is not None or not self.buf.startswith("</", end):
            return False
        self._parts.append(self.buf[self.pos : end])
        self.pos = len(self.buf)
        self._pair()
        return self._close_call()

    def _pair(self) -> None:
        """Emit the collected value of ``self._key`` as the next JSON member."""
        value = _decode_value("".join(self._parts), self._schema_type(self._key))
        self._parts = []
        piece = (
            json.dumps(self._key, ensure_ascii=False) + ": " + json.dumps(value, ensure_ascii=False)
        )
        self.out.args(self._index, ("{" if self._first else ", ") + piece)
        self._first = False
