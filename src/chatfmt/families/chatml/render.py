"""Render helpers shared by the ChatML-based families (Qwen, Hermes, SmolLM, Kimi, gpt-oss, …)."""

from __future__ import annotations

import json
from typing import Any

from ...errors import UnsupportedFeatureError, ValidationError
from ...protocol import Conversation, Message, ToolCall
from ...segments import SegmentBuilder
from .markers import IM_END, IM_START


def tojson(value: Any, where: str = "tools") -> str:
    """Jinja ``tojson`` as transformers defines it: no ASCII escaping, default separators."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"not JSON-serializable ({exc})", field=where) from None


def require_text(template: str, m: Message) -> str:
    """The message content; ``None`` is rejected where the official template concatenates it.

    Documented workaround: an assistant tool-call message with ``content: null`` (what OpenAI
    clients send) renders as with ``content: ""`` instead of failing like the official template.
    """
    if m.content is None and m.tool_calls:
        return ""
    if m.content is None:
        raise ValidationError(
            f"template {template!r} needs a string content here (the official template fails on "
            'null content; pass "" instead)',
            index=m.index,
            field="content",
        )
    return m.content


def require_messages(template: str, conv: Conversation) -> None:
    """Templates that read ``messages[0]`` fail on an empty conversation."""
    if not conv.messages:
        raise ValidationError(f"template {template!r} needs at least one message", field="messages")


def function_call(template: str, m: Message, call: ToolCall, j: int) -> ToolCall:
    """A function tool call; code-interpreter calls have no format in these templates."""
    if call.is_code:
        raise UnsupportedFeatureError(
            f"template {template!r} has no code-interpreter call format",
            index=m.index,
            field=f"tool_calls[{j}]",
        )
    return call


_HEADERS = {role: f"{IM_START}{role}\n" for role in ("system", "user", "assistant", "tool")}


def chatml_turn(b: SegmentBuilder, role: str, text: str, index: int, trained: bool = False) -> None:
    """``<|im_start|>{role}\\n{text}<|im_end|>\\n`` (the end marker trained for the assistant)."""
    b.turn(_HEADERS.get(role) or f"{IM_START}{role}\n", text, IM_END, "\n", index, trained)
