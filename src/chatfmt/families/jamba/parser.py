"""AI21 Jamba: ``<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import BlockParser


class JambaParser(BlockParser):
    """A JSON list (or a lone object) of call objects per ``<tool_calls>`` block."""

    name = "jamba"
    special_markers = ("<tool_calls>", "</tool_calls>")
    starts: ClassVar[Mapping[str, str]] = {"<tool_calls>": "block"}
    end = "</tool_calls>"
