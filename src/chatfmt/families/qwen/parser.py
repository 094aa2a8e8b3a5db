"""The qwen family's reasoning parser: Qwen3's ``<think>`` block, which a call can end."""

from __future__ import annotations

from typing import ClassVar

from ...parsing.reasoning import ThinkParser

#: What opens a Qwen3 tool call (Hermes JSON and Qwen3-Coder XML calls alike).
TOOL_CALL = "<tool_call>"


class Qwen3ThinkParser(ThinkParser):
    """Qwen3, QwQ and Qwen3.5: ``<think>…</think>`` before the answer; a ``<tool_call>``
    inside a block the model never closes ends it there (it started its call without closing
    its thinking), so the call is read as a call; one followed by ``</think>`` is reasoning
    (a call drafted in the thinking). Streamed, the text from such a ``<tool_call>`` waits
    for ``</think>`` or the end of the output."""

    name = "qwen3"
    special_markers: ClassVar[tuple[str, ...]] = (*ThinkParser.special_markers, TOOL_CALL)
    ends_unclosed: ClassVar[tuple[str, ...]] = (TOOL_CALL,)
