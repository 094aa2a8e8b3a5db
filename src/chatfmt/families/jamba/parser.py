"""AI21 Jamba: ``<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.states import State
from .markers import TOOL_CALLS, TOOL_CALLS_CLOSE


class JambaParser(BlockParser):
    """A JSON list (or a lone object) of call objects per ``<tool_calls>`` block."""

    name = "jamba"
    special_markers = (TOOL_CALLS, TOOL_CALLS_CLOSE)
    starts: ClassVar[Mapping[str, State]] = {TOOL_CALLS: Block.GAP}
    end = TOOL_CALLS_CLOSE
