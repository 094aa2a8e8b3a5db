"""Dataset rows → conversations: OpenAI ``messages`` rows and ShareGPT ``conversations`` rows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import ValidationError

#: ShareGPT ``from`` values and the OpenAI role they mean.
SHAREGPT_ROLES = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bard": "assistant",
    "bing": "assistant",
    "model": "assistant",
    "observation": "tool",
    "tool": "tool",
    "function_response": "tool",
}


def _clean_message(m: Any) -> Any:
    """Drop keys whose value is ``None`` (columnar formats fill absent fields with nulls)."""
    if not isinstance(m, Mapping):
        return m
    out = {k: v for k, v in m.items() if v is not None or k == "content"}
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [_clean_call(c) for c in calls]
    return out


def _clean_call(c: Any) -> Any:
    if not isinstance(c, Mapping):
        return c
    out = {k: v for k, v in c.items() if v is not None}
    fn = out.get("function")
    if isinstance(fn, Mapping):
        out["function"] = {k: v for k, v in fn.items() if v is not None}
    return out


def _tools(record: Mapping[str, Any]) -> Any:
    tools = record.get("tools")
    if isinstance(tools, str):
        if not tools.strip():
            return None
        try:
            tools = json.loads(tools)
        except ValueError as exc:
            raise ValidationError(
                f"'tools' is a string but not JSON ({exc})", field="tools"
            ) from None
    return tools or None


def sharegpt_to_messages(turns: Any) -> list[dict[str, Any]]:
    """ShareGPT turns (``from``/``value``) → OpenAI messages.

    ``function_call`` turns (JSON ``{"name", "arguments"}``) become assistant tool calls.
    """
    if not isinstance(turns, list):
        raise ValidationError("'conversations' must be a list of turns", field="conversations")
    messages: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or "from" not in turn:
            raise ValidationError("a ShareGPT turn needs 'from' and 'value'", index=i, field="from")
        src = str(turn["from"]).lower()
        value = turn.get("value")
        if src == "function_call":
            try:
                call: Any = json.loads(value) if isinstance(value, str) else value
                calls: list[Any] = call if isinstance(call, list) else [call]
                tool_calls = [
                    {
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c.get("arguments", {})},
                    }
                    for c in calls
                ]
            except (ValueError, KeyError, TypeError):
                raise ValidationError(
                    "function_call value must be JSON {name, arguments}", index=i, field="value"
                ) from None
            messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
            continue
        role = SHAREGPT_ROLES.get(src)
        if role is None:
            raise ValidationError(
                f"unknown ShareGPT speaker {turn['from']!r}", index=i, field="from"
            )
        messages.append({"role": role, "content": value})
    return messages


def _with_system_column(messages: list[dict[str, Any]], system: Any) -> list[dict[str, Any]]:
    """Put a ShareGPT ``system`` column first.

    An empty or missing column is ignored. If the turns already start with a system
    turn, the row is rejected unless both say the same (nothing may be dropped silently).
    """
    if system is None or system == "":
        return messages
    if not isinstance(system, str):
        raise ValidationError(
            f"'system' must be a string, got {type(system).__name__}", field="system"
        )
    if messages and messages[0]["role"] == "system":
        if messages[0]["content"] == system:
            return messages
        raise ValidationError(
            "row has both a 'system' column and a different system turn in 'conversations' "
            "(keep one of them)",
            field="system",
        )
    return [{"role": "system", "content": system}, *messages]


def record_to_conversation(record: Any) -> dict[str, Any]:
    """A dataset row → ``{"messages": [...], "tools": [...] | None}``.

    Rows hold OpenAI ``messages`` or ShareGPT ``conversations`` (plus optional
    ``system`` and ``tools``; ``tools`` may be a JSON string). A ShareGPT row with a
    ``system`` column and a different leading system turn raises :class:`ValidationError`.
    """
    if not isinstance(record, Mapping):
        raise ValidationError(f"a row must be an object, got {type(record).__name__}")
    if record.get("messages") is not None:
        raw = record["messages"]
        if not isinstance(raw, list):
            raise ValidationError("'messages' must be a list", field="messages")
        messages = [_clean_message(m) for m in raw]
    elif record.get("conversations") is not None:
        messages = _with_system_column(
            sharegpt_to_messages(record["conversations"]), record.get("system")
        )
    else:
        raise ValidationError("row has neither 'messages' (OpenAI) nor 'conversations' (ShareGPT)")
    return {"messages": messages, "tools": _tools(record)}
