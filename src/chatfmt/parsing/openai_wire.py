"""OpenAI's wire shapes of parser output, made in this one place.

:func:`delta_dict` gives a ``chat.completion.chunk`` choice delta, :func:`message_dict`
an assistant message (what :meth:`ParsedMessage.to_openai` returns). chatfmt's
``error`` flags ride along by default; the gateway sends them without
(``errors=False``: clients validate arguments, as with any OpenAI model) and may drop
the calls from index ``max_calls`` on (``parallel_tool_calls: false``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .deltas import (
    ContentDelta,
    Delta,
    ParsedMessage,
    ParsedToolCall,
    ReasoningDelta,
    ToolCallDelta,
)

__all__ = ["call_dict", "delta_dict", "delta_dicts", "message_dict"]


def delta_dict(
    delta: Delta, *, errors: bool = True, max_calls: int | None = None
) -> dict[str, Any] | None:
    """The ``chat.completion.chunk`` delta of ``delta`` (``None`` if nothing is left of it)."""
    if isinstance(delta, ContentDelta):
        return {"content": delta.text}
    if isinstance(delta, ReasoningDelta):
        return {"reasoning_content": delta.text}
    return _call_delta(delta, errors, max_calls)


def _call_delta(call: ToolCallDelta, errors: bool, max_calls: int | None) -> dict[str, Any] | None:
    if max_calls is not None and call.index >= max_calls:
        return None
    entry: dict[str, Any] = {"index": call.index}
    if call.id is not None:  # the first piece
        entry["id"] = call.id
        if call.code:
            entry["type"] = "code_interpreter"
            entry["code_interpreter"] = {"input": call.text}
        else:
            entry["type"] = "function"
            entry["function"] = {"name": call.name or "", "arguments": call.text}
    elif call.text:
        if call.code:
            entry["code_interpreter"] = {"input": call.text}
        else:
            entry["function"] = {"arguments": call.text}
    if errors and call.error is not None:
        entry["error"] = call.error
    if len(entry) == 1:  # only the index
        return None
    return {"tool_calls": [entry]}


def delta_dicts(
    deltas: Iterable[Delta], *, errors: bool = True, max_calls: int | None = None
) -> list[dict[str, Any]]:
    """:func:`delta_dict` of each delta, leaving out those with nothing left."""
    out = []
    for delta in deltas:
        wire = delta_dict(delta, errors=errors, max_calls=max_calls)
        if wire is not None:
            out.append(wire)
    return out


def call_dict(call: ParsedToolCall, *, errors: bool = True) -> dict[str, Any]:
    """An OpenAI ``tool_calls`` entry of a message."""
    out: dict[str, Any] = {"id": call.id}
    if call.code:
        out["type"] = "code_interpreter"
        out["code_interpreter"] = {"input": call.arguments}
    else:
        out["type"] = "function"
        out["function"] = {"name": call.name, "arguments": call.arguments}
    if errors and call.error is not None:
        out["error"] = call.error
    return out


def message_dict(
    message: ParsedMessage, *, errors: bool = True, max_calls: int | None = None
) -> dict[str, Any]:
    """The OpenAI assistant message of ``message`` (``reasoning_content`` and
    ``tool_calls`` only when present)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.reasoning_content:
        out["reasoning_content"] = message.reasoning_content
    calls = message.tool_calls if max_calls is None else message.tool_calls[:max_calls]
    if calls:
        out["tool_calls"] = [call_dict(c, errors=errors) for c in calls]
    return out
