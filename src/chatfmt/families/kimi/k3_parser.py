"""Kimi-K3: tags ``<|open|>TAG key="value" …<|sep|>`` … ``<|close|>TAG<|sep|>``.

An assistant message is ``<|open|>think<|sep|>reasoning<|close|>think<|sep|>`` (the
``kimi_k3`` reasoning parser; the generation prompt opens it when ``thinking`` is on),
``<|open|>response<|sep|>content<|close|>response<|sep|>`` (the wrapper is markup;
the prompt opens it when ``thinking`` is off), then the calls::

    <|open|>tools<|sep|>
      <|open|>call tool="NAME" index="1"<|sep|>
        <|open|>argument key="K" type="string"<|sep|>VALUE<|close|>argument<|sep|> …
      <|close|>call<|sep|> …
    <|close|>tools<|sep|>

and ``<|close|>message<|sep|>`` (markup). Attribute values escape ``&`` and ``"`` as
``&amp;`` / ``&quot;``. An argument's ``type`` (``string``, ``number``, ``boolean``,
``null``, ``object``, ``array``) types its text: strings stream as they come, other
values are converted when complete (kept as a string if the text is not of that
type; without a ``type`` the tool's schema decides, see
:func:`~.xml_values.typed_value`). Instead of arguments a call may carry one JSON
object in ``<|open|>json type="object"<|sep|>{…}<|close|>json<|sep|>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.base import Emitter
from ...parsing.blocks import Block, BlockParser, RawArgs
from ...parsing.reasoning import think_parser
from ...parsing.special import SpecialTokens
from ...parsing.states import State
from ...parsing.xml_values import parameter_schema, typed_value
from .markers import CLOSE, OPEN, SEP

OPEN, CLOSE, SEP = OPEN, CLOSE, SEP


def open_tag(tag: str) -> str:
    return f"{OPEN}{tag}{SEP}"


def close_tag(tag: str) -> str:
    return f"{CLOSE}{tag}{SEP}"


_HEADER = re.compile(r"([A-Za-z_][\w\-]*)((?:\s+[\w\-]+=\"[^\"]*\")*)\s*")
_ATTR = re.compile(r"([\w\-]+)=\"([^\"]*)\"")
#: Longest tag header held while waiting for ``<|sep|>``.
_MAX_TAG = 1024

Tag = tuple[str, str, dict[str, str]]  # (OPEN or CLOSE, tag name, attributes)


def _unescape(value: str) -> str:
    return value.replace("&quot;", '"').replace("&amp;", "&")


class _KimiK3(State):
    """States of :class:`KimiK3Parser` beyond :class:`~.blocks.Block`."""

    K3_TOOLS = auto()  # between calls
    K3_CALL = auto()  # between arguments
    K3_VALUE = auto()  # an argument's text
    K3_JSON = auto()  # a JSON-object call
    K3_JSON_END = auto()  # after a JSON-object call
    K3_DONE = auto()  # after a truncated argument: nothing more is read
    K3_JUNK = auto()


class KimiK3Parser(BlockParser):
    """States: :class:`_KimiK3` and :class:`~.blocks.Block`'s ``TEXT`` (content; the response
    wrapper, stray think tags and the message end are markup)."""

    states = _KimiK3

    name = "kimi_k3"
    starts: ClassVar[Mapping[str, State]] = {
        open_tag("response"): Block.TEXT,
        close_tag("response"): Block.TEXT,
        close_tag("message"): Block.TEXT,
        open_tag("tools"): _KimiK3.K3_TOOLS,
        # think tags that reach the tool parser (no reasoning parser, or the prefill switched
        # off): markup, their text is content
        open_tag("think"): Block.TEXT,
        close_tag("think"): Block.TEXT,
    }

    def __init__(self, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]) -> None:
        super().__init__(out, budget, options)
        self._index = -1  # the open call
        self._tool = ""
        self._members = 0  # arguments written so far in the open call
        self._json_call = False
        self._kind: str | None = None  # the open argument's declared type
        self._key = ""
        self._value: list[str] = []  # text of a non-string argument so far

    # ------------------------------------------------------------------ helpers
    def _tag(self) -> Tag | bool | None:
        """A tag at ``pos``: consumed and returned; None if undecided, False if none."""
        buf, pos = self.buf, self.pos
        head = OPEN if buf.startswith(OPEN, pos) else CLOSE if buf.startswith(CLOSE, pos) else ""
        if not head:
            rest = buf[pos : pos + len(CLOSE)]
            if not self.final and (OPEN.startswith(rest) or CLOSE.startswith(rest)):
                return None
            return False
        start = pos + len(head)
        sep = buf.find(SEP, start, start + _MAX_TAG + len(SEP))
        if sep < 0:
            if not self.final and len(buf) - start < _MAX_TAG + len(SEP):
                return None
            return False
        m = _HEADER.fullmatch(buf, start, sep)
        if m is None:
            return False
        self.pos = sep + len(SEP)
        attrs = {k: _unescape(v) for k, v in _ATTR.findall(m.group(2))}
        return head, m.group(1), attrs

    def _broken(self, reason: str, start: int) -> None:
        """The open call breaks at ``start``: flag it; its rest (to ``</call>``) is raw text."""
        self.out.fail(self._index, reason)
        self.pos = start
        self.junk_index = self._index
        self.state = _KimiK3.K3_JUNK

    def _end_call(self) -> None:
        if not self._json_call:
            self.out.args(self._index, "}" if self._members else "{}")
        self.state = _KimiK3.K3_TOOLS

    # ------------------------------------------------------------------ states
    def _s_k3_tools(self) -> bool:
        if not self.skip_ws():
            return False
        start = self.pos
        tag = self._tag()
        if tag is None:
            return False
        if tag is not False:
            head, name, attrs = tag  # type: ignore[misc]
            if head == OPEN and name == "call":
                self._tool = attrs.get("tool", "")
                self._index = self.out.start_call(self._tool)
                self._members, self._json_call = 0, False
                self.state = _KimiK3.K3_CALL
                return True
            if head == CLOSE and name == "tools":
                self.end_block()
                return True
        self.pos = start  # not a call: text
        self.end_block()
        return True

    def _s_k3_call(self) -> bool:
        start = self.pos
        if not self.skip_ws():
            if self.final:
                self._end_call()  # complete arguments, no end tag: a valid call
            return False
        tag = self._tag()
        if tag is None:
            self.pos = start
            return False
        if tag is False:
            self._broken("truncated" if self.final else "text in a call", start)
            return True
        head, name, attrs = tag  # type: ignore[misc]
        if head == CLOSE and name == "call":
            self._end_call()
        elif head == OPEN and name == "argument" and not self._json_call:
            self._key = attrs.get("key", "")
            self._kind = attrs.get("type")
            piece = json.dumps(self._key, ensure_ascii=False) + ": "
            self.out.args(self._index, (", " if self._members else "{") + piece)
            self._members += 1
            if self._kind == "string":
                self.out.args(self._index, '"')
            self._value = []
            self.state = _KimiK3.K3_VALUE
        elif head == OPEN and name == "json" and not self._members and not self._json_call:
            self._json_call = True
            self.raw = RawArgs(self.out, self._index)
            self.state = _KimiK3.K3_JSON
        else:
            self._broken(f"unexpected tag {name!r} in a call", start)
        return True

    def _s_k3_value(self) -> bool:
        end, marker, resume = self.end_set(close_tag("argument")).split(self.buf, self.pos)
        if self.final and marker is None:
            end = resume = len(self.buf)
        text = self.buf[self.pos : end]
        self.pos = resume
        if self._kind == "string":
            if text:
                self.out.args(self._index, json.dumps(text, ensure_ascii=False)[1:-1])
        else:
            self._value.append(text)
        if marker is None:
            if self.final:
                self.out.fail(self._index, "truncated")
                self.state = _KimiK3.K3_DONE
            return False
        if self._kind == "string":
            self.out.args(self._index, '"')
        else:
            value = "".join(self._value)
            if self._kind is None:
                schema = parameter_schema(self.out.tool_schema(self._tool), self._key)
            else:
                schema = {"type": self._kind}
            self.out.args(self._index, json.dumps(typed_value(value, schema), ensure_ascii=False))
        self._value = []
        self.state = _KimiK3.K3_CALL
        return True

    def _s_k3_json(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        if status == "failed":
            self.state = _KimiK3.K3_JUNK
        else:
            self.state = _KimiK3.K3_JSON_END
        return True

    def _s_k3_json_end(self) -> bool:
        start = self.pos
        if not self.skip_ws():
            return False
        tag = self._tag()
        if tag is None:
            self.pos = start
            return False
        if tag is not False and tag[0] == CLOSE and tag[1] == "json":  # type: ignore[index]
            self.state = _KimiK3.K3_CALL
            return True
        self._broken("text after the JSON arguments", start)
        return True

    def _s_k3_junk(self) -> bool:
        self.cur_end = close_tag("call")
        more = self._s_junk()
        if self.state is Block.TEXT:
            self.state = _KimiK3.K3_TOOLS
        return more

    def _s_k3_done(self) -> bool:
        return False


KimiK3Think = think_parser(
    "kimi_k3",
    open_tag("think"),
    close_tag("think"),
    qualname="KimiK3Think",
    answer_markup=(open_tag("response"), close_tag("response"), close_tag("message")),
)
