"""ServiceNow Apriel 1.5 / 1.6 Thinker.

The model writes ``Here are my reasoning steps:`` (Apriel 1.6's generation prompt
already holds it), its reasoning, ``[BEGIN FINAL RESPONSE]``, the answer, and on
1.5 ``[END FINAL RESPONSE]``; calls are a JSON list
``<tool_calls>[{"name": …, "arguments": {…}}, …]</tool_calls>`` (an ``"id"`` member
is ignored). The ``[BEGIN/END FINAL RESPONSE]`` markers are markup, also without
the reasoning parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from .base import register_reasoning_parser, register_tool_parser
from .blocks import BlockParser
from .reasoning import ThinkParser

_HEAD = "Here are my reasoning steps:"
_BEGIN, _END = "[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]"


class AprielParser(BlockParser):
    """``<tool_calls>[…]</tool_calls>``; the final-response markers are dropped."""

    name = "apriel"
    special_markers = ("<tool_calls>", "</tool_calls>")
    starts: ClassVar[Mapping[str, str]] = {"<tool_calls>": "block", _BEGIN: "text", _END: "text"}
    end = "</tool_calls>"


class AprielReasoningParser(ThinkParser):
    """Reasoning from ``Here are my reasoning steps:`` to ``[BEGIN FINAL RESPONSE]``."""

    name = "apriel"
    open_marker = _HEAD
    close_marker = _BEGIN
    special_markers = (_HEAD, _BEGIN)
    openers = ((_HEAD, "reasoning"),)


register_tool_parser(AprielParser)
register_reasoning_parser(AprielReasoningParser)
