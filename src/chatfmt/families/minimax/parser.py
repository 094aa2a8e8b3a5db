"""MiniMax-M1 tool calls (``<tool_calls>`` with one ``{"name": …, "arguments": …}`` object
per line), MiniMax-M3 reasoning (``<mm:think>``), and the M2 / M3 ``<invoke>`` blocks (the
shared machine of :mod:`chatfmt.parsing.invoke`; M3's parameters are elements whose nested
objects / arrays are child elements, read by :func:`element_value`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from ...parsing.base import WS
from ...parsing.blocks import Block, BlockParser
from ...parsing.invoke import _MALFORMED, Invoke, InvokeParser
from ...parsing.reasoning import Think, ThinkParser
from ...parsing.states import State
from ...parsing.xml_values import parameter_schema, typed_value
from .markers import (
    MINIMAX_TOOL_CALL,
    MINIMAX_TOOL_CALL_CLOSE,
    MM_THINK,
    MM_THINK_CLOSE,
    TOOL_CALLS,
    TOOL_CALLS_CLOSE,
)

_M3_OPEN, _M3_CLOSE = MM_THINK, MM_THINK_CLOSE


class MiniMaxM1Parser(BlockParser):
    """Call objects (newline-separated; ``,`` also accepted) inside ``<tool_calls>…</tool_calls>``."""

    name = "minimax_m1"
    starts: ClassVar[Mapping[str, State]] = {TOOL_CALLS: Block.GAP}
    end = TOOL_CALLS_CLOSE


class MiniMaxM3ThinkParser(ThinkParser):
    """MiniMax-M3 reasoning: ``<mm:think>…</mm:think>`` before the answer.

    A turn without reasoning starts with a bare ``</mm:think>`` (the template's
    "thinking disabled" prefix), which is markup: an empty block.
    """

    name = "minimax_m3"
    open_marker = _M3_OPEN
    close_marker = _M3_CLOSE
    special_markers = (_M3_OPEN, _M3_CLOSE)
    openers = ((_M3_OPEN, Think.REASONING), (_M3_CLOSE, Think.AFTER))


# ---------------------------------------------------------------------- MiniMax-M2
_MM_CALL, _MM_CALL_END = MINIMAX_TOOL_CALL, MINIMAX_TOOL_CALL_CLOSE


class MiniMaxM2Parser(InvokeParser):
    """MiniMax-M2 / M2.1: ``<minimax:tool_call><invoke name="f"><parameter name="k">v…``."""

    name = "minimax_m2"
    special_markers = (_MM_CALL, _MM_CALL_END)
    starts: ClassVar[Mapping[str, State]] = {_MM_CALL: Invoke.CALLS}
    end = _MM_CALL_END


# ---------------------------------------------------------------------- MiniMax-M3
MM3_NS = "]<]minimax[>["
_MAX_DEPTH = 64


class MiniMaxM3Parser(InvokeParser):
    """MiniMax-M3: ``NS<tool_call>`` wrapper, ``NS<invoke name="f">``, parameters as
    elements ``NS<k>v NS</k>`` whose nested objects / arrays are child elements
    (``NS`` = ``]<]minimax[>[``; see module doc)."""

    name = "minimax_m3"
    starts: ClassVar[Mapping[str, State]] = {MM3_NS + "<tool_call>": Invoke.CALLS}
    end = MM3_NS + "</tool_call>"
    invoke_open = MM3_NS + "<invoke"
    invoke_close = MM3_NS + "</invoke>"
    param_open = MM3_NS + "<"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._depth = 0

    def _s_param_head(self) -> bool:
        got = self.read_header()
        if got is None:
            return False
        key, complete = got
        self._raw += key + (">" if complete else "")
        if not complete or not key or key.startswith("/"):
            return self._fail("truncated" if not complete and self.final else _MALFORMED, self._raw)
        self._key, self._attrs, self._parts, self._depth = key, {}, [], 0
        self.state = Invoke.VALUE
        return True

    def value_markers(self) -> tuple[str, ...]:
        return (f"{MM3_NS}<{self._key}>", f"{MM3_NS}</{self._key}>")

    def value_marker(self, marker: str) -> bool:
        """Nested elements named like the parameter: count them, keep them as value text."""
        if marker.startswith(MM3_NS + "</"):
            if not self._depth:
                return False
            self._depth -= 1
        else:
            self._depth += 1
        self._parts.append(marker)
        return True

    def cut_close(self, cut: str) -> bool:
        closer = f"{MM3_NS}</{self._key}>"
        return cut.startswith(MM3_NS + "</") and closer.startswith(cut) and not self._depth

    def decode(self, text: str, attrs: Mapping[str, str], schema: Any) -> Any:
        return element_value(text, schema)


def _children(text: str) -> list[tuple[str, str]] | None:
    """The ``NS<tag>…NS</tag>`` children of an element's text, or None if it is not
    a sequence of elements (text outside them, unbalanced tags)."""
    out: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in WS:
            pos += 1
        if pos == n:
            return out
        if not text.startswith(MM3_NS + "<", pos):
            return None
        gt = text.find(">", pos + len(MM3_NS))
        tag = text[pos + len(MM3_NS) + 1 : gt] if gt >= 0 else ""
        if not tag or tag.startswith("/"):
            return None
        opener, closer = f"{MM3_NS}<{tag}>", f"{MM3_NS}</{tag}>"
        depth, at = 1, gt + 1
        start = at
        while depth:
            c = text.find(closer, at)
            if c < 0:
                return None
            o = text.find(opener, at, c)
            if o >= 0:
                depth, at = depth + 1, o + len(opener)
            else:
                depth, at = depth - 1, c + len(closer)
        out.append((tag, text[start : at - len(closer)]))
        pos = at


def _sub_schema(schema: Any, key: str | None) -> Any:
    """The schema of an object member ``key`` (a property, else ``additionalProperties``) or of
    array items (``None``)."""
    if not isinstance(schema, Mapping):
        return None
    if key is None:
        return schema.get("items")
    return parameter_schema(schema, key) or schema.get("additionalProperties")


def element_value(text: str, schema: Any, depth: int = 0) -> Any:
    """A MiniMax-M3 element's value: child elements → an array when the schema says so or
    (without an object schema) all are ``<item>``, else an object (a repeated member becomes
    a list); text → converted per ``schema``."""
    kinds = _schema_kinds(schema)
    if MM3_NS in text and depth < _MAX_DEPTH:
        children = _children(text)
        if children:
            if "array" in kinds or (
                "object" not in kinds and all(tag == "item" for tag, _ in children)
            ):
                item = _sub_schema(schema, None)
                return [element_value(v, item, depth + 1) for _, v in children]
            counts = Counter(tag for tag, _ in children)
            members: dict[str, Any] = {}
            for tag, v in children:
                sub = _sub_schema(schema, tag)
                if counts[tag] == 1:
                    members[tag] = element_value(v, sub, depth + 1)
                    continue
                if "array" in _schema_kinds(sub):
                    sub = _sub_schema(sub, None)
                members.setdefault(tag, []).append(element_value(v, sub, depth + 1))
            return members
    if not text.strip() and kinds and kinds[0] in ("array", "object"):
        return [] if kinds[0] == "array" else {}
    return typed_value(text, schema)


def _schema_kinds(schema: Any) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    found = [
        k for sub in (schema.get("anyOf") or schema.get("oneOf") or ()) for k in _schema_kinds(sub)
    ]
    if not found and isinstance(schema.get("properties"), Mapping):
        found.append("object")
    return found
