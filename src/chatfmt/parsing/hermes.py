"""Hermes / Qwen2.5 / Qwen3 / QwQ / SmolLM3: ``<tool_call>{"name": …, "arguments": …}</tool_call>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from .base import register_tool_parser
from .blocks import Block, BlockParser
from .states import State


class HermesParser(BlockParser):
    """One or more call objects per ``<tool_call>`` block (separated by ``,`` if several)."""

    name = "hermes"
    special_markers = ("<tool_call>", "</tool_call>")
    starts: ClassVar[Mapping[str, State]] = {"<tool_call>": Block.GAP}
    end = "</tool_call>"


register_tool_parser(HermesParser, "qwen25", "qwen3", "qwen")
