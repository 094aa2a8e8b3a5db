"""MiniMax-M1 tool calls (``<tool_calls>`` with one ``{"name": …, "arguments": …}`` object
per line) and MiniMax-M3 reasoning (``<mm:think>``).

(MiniMax-M2 and M3 tool calls are ``<invoke>`` blocks: see :mod:`.invoke`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...parsing.blocks import BlockParser
from ...parsing.invoke import _MALFORMED, InvokeParser, element_value
from ...parsing.reasoning import ThinkParser

_M3_OPEN, _M3_CLOSE = "<mm:think>", "</mm:think>"


class MiniMaxM1Parser(BlockParser):
    """Call objects (newline-separated; ``,`` also accepted) inside ``<tool_calls>…</tool_calls>``."""

    name = "minimax_m1"
    starts: ClassVar[Mapping[str, str]] = {"<tool_calls>": "block"}
    end = "</tool_calls>"


class MiniMaxM3ThinkParser(ThinkParser):
    """MiniMax-M3 reasoning: ``<mm:think>…</mm:think>`` before the answer.

    A turn without reasoning starts with a bare ``</mm:think>`` (the template's
    "thinking disabled" prefix), which is markup: an empty block.
    """

    name = "minimax_m3"
    open_marker = _M3_OPEN
    close_marker = _M3_CLOSE
    special_markers = (_M3_OPEN, _M3_CLOSE)
    openers = ((_M3_OPEN, "reasoning"), (_M3_CLOSE, "after"))


# ---------------------------------------------------------------------- MiniMax-M2
_MM_CALL, _MM_CALL_END = "<minimax:tool_call>", "</minimax:tool_call>"


class MiniMaxM2Parser(InvokeParser):
    """MiniMax-M2 / M2.1: ``<minimax:tool_call><invoke name="f"><parameter name="k">v…``."""

    name = "minimax_m2"
    special_markers = (_MM_CALL, _MM_CALL_END)
    starts: ClassVar[Mapping[str, str]] = {_MM_CALL: "calls"}
    end = _MM_CALL_END


# ---------------------------------------------------------------------- MiniMax-M3
MM3_NS = "]<]minimax[>["
_MAX_DEPTH = 64


class MiniMaxM3Parser(InvokeParser):
    """MiniMax-M3: ``NS<tool_call>`` wrapper, ``NS<invoke name="f">``, parameters as
    elements ``NS<k>v NS</k>`` whose nested objects / arrays are child elements
    (``NS`` = ``]<]minimax[>[``; see module doc)."""

    name = "minimax_m3"
    starts: ClassVar[Mapping[str, str]] = {MM3_NS + "<tool_call>": "calls"}
    end = MM3_NS + "</tool_call>"
    invoke_open = MM3_NS + "<invoke"
    invoke_close = MM3_NS + "</invoke>"
    param_open = MM3_NS + "<"

    _depth = 0

    def _s_param_head(self) -> bool:
        got = self.read_header()
        if got is None:
            return False
        key, complete = got
        self._raw += key + (">" if complete else "")
        if not complete or not key or key.startswith("/"):
            return self._fail("truncated" if not complete and self.final else _MALFORMED, self._raw)
        self._key, self._attrs, self._parts, self._depth = key, {}, [], 0
        self.state = "value"
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
