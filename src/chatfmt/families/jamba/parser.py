"""AI21 Jamba: ``<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import BlockParser
from .markers import TOOL_CALLS, TOOL_CALLS_CLOSE


class JambaParser(BlockParser):
    """A JSON list (or a lone object) of call objects per ``<tool_calls>`` block."""

    name = "jamba"
    special_markers = (TOOL_CALLS, TOOL_CALLS_CLOSE)
    starts: ClassVar[Mapping[str, str]] = {TOOL_CALLS: "block"}
    end = TOOL_CALLS_CLOSE
