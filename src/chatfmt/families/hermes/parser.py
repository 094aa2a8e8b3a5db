"""Hermes / Qwen2.5 / Qwen3 / QwQ / SmolLM3: ``<tool_call>{"name": …, "arguments": …}</tool_call>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import BlockParser


class HermesParser(BlockParser):
    """One or more call objects per ``<tool_call>`` block (separated by ``,`` if several)."""

    name = "hermes"
    special_markers = ("<tool_call>", "</tool_call>")
    starts: ClassVar[Mapping[str, str]] = {"<tool_call>": "block"}
    end = "</tool_call>"
