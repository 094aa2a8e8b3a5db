"""Hermes / Qwen2.5 / Qwen3 / QwQ / SmolLM3: ``<tool_call>{"name": …, "arguments": …}</tool_call>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.states import State
from .markers import TOOL_CALL, TOOL_CALL_CLOSE


class HermesParser(BlockParser):
    """One or more call objects per ``<tool_call>`` block (separated by ``,`` if several)."""

    name = "hermes"
    special_markers = (TOOL_CALL, TOOL_CALL_CLOSE)
    starts: ClassVar[Mapping[str, State]] = {TOOL_CALL: Block.GAP}
    end = TOOL_CALL_CLOSE
