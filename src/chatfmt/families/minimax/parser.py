"""MiniMax-M1 tool calls (``<tool_calls>`` with one ``{"name": …, "arguments": …}`` object
per line) and MiniMax-M3 reasoning (``<mm:think>``).

(MiniMax-M2 and M3 tool calls are ``<invoke>`` blocks: see :mod:`.invoke`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.base import register_reasoning_parser, register_tool_parser
from ...parsing.blocks import BlockParser
from ...parsing.reasoning import ThinkParser

_M3_OPEN, _M3_CLOSE = "<mm:think>", "</mm:think>"


class MiniMaxM1Parser(BlockParser):
    """Call objects (newline-separated; ``,`` also accepted) inside ``<tool_calls>…</tool_calls>``."""

    name = "minimax_m1"
    starts: ClassVar[Mapping[str, str]] = {"<tool_calls>": "block"}
    end = "</tool_calls>"


register_tool_parser(MiniMaxM1Parser, "minimax", "minimax-m1")


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


register_reasoning_parser(MiniMaxM3ThinkParser, "mm_think")
