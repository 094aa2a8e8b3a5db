"""Granite (``<|tool_call|>[…]`` and ``<tool_call>{…}</tool_call>``) and Phi-4 (``functools[…]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from .base import register_tool_parser
from .blocks import BlockParser


class GraniteParser(BlockParser):
    """Granite 3.x writes ``<|tool_call|>`` and a JSON list; Granite 4 uses Hermes-style blocks."""

    name = "granite"
    special_markers = ("<|tool_call|>", "<tool_call>", "</tool_call>")
    starts: ClassVar[Mapping[str, str]] = {"<|tool_call|>": "block", "<tool_call>": "block"}
    ends: ClassVar[Mapping[str, str | None]] = {
        "<|tool_call|>": None,
        "<tool_call>": "</tool_call>",
    }


class Phi4Parser(BlockParser):
    """Phi-4-mini: ``functools[{"name": …, "arguments": …}, …]``."""

    name = "phi4"
    special_markers = ("functools",)
    starts: ClassVar[Mapping[str, str]] = {"functools": "block"}


register_tool_parser(GraniteParser, "granite3", "granite4")
register_tool_parser(Phi4Parser, "phi4_mini_json")
