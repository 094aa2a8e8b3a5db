"""Responses input items as chat messages (``POST /v1/responses``).

``message`` items become messages (text parts joined); the assistant's items in a row —
``reasoning`` (its text, else its summary), ``message`` and ``function_call`` items, one
reply's output — fold into the one assistant message they came from (reasoning and text
concatenated, calls in order), the message chat completions returns for the same reply, so
a reply sent back as input renders to what the model wrote; two assistant messages in a row
stay two. ``function_call_output`` is a tool message. :func:`located` makes an error about the translated messages name the request's
own fields.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import APIError
from .responses_schema import (
    FunctionCallItem,
    FunctionCallOutputItem,
    MessageItem,
    ReasoningItem,
    Unsupported,
)

# ---------------------------------------------------------------------- items → messages
_PART_REFUSALS = {
    "input_image": "images are not supported: models are served as text only",
    "input_file": "files are not supported: send their text as input_text",
    "input_audio": "audio is not supported: models are served as text only",
    "input_video": "video is not supported: models are served as text only",
}


def _text(parts: str | Sequence[Any], where: str) -> str:
    """The text of a content string or parts (text, output text, refusal) joined."""
    if isinstance(parts, str):
        return parts
    texts = []
    for j, part in enumerate(parts):
        if isinstance(part, Unsupported):
            reason = _PART_REFUSALS.get(
                part.type, f"content parts of type {part.type!r} are not supported"
            )
            raise APIError(400, reason, param=f"{where}[{j}]", code="unsupported_value")
        texts.append(part.refusal if part.type == "refusal" else part.text)
    return "".join(texts)


@dataclass
class _Turn:
    """The assistant message being folded from consecutive output items."""

    source: str
    reasoning: str | None = None
    content: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    last_message: bool = False  # the last item read was a message

    def message(self) -> dict[str, Any]:
        content = self.content
        if content is None and not self.calls:
            content = ""  # reasoning alone: templates want a string
        out: dict[str, Any] = {"role": "assistant", "content": content}
        if self.reasoning is not None:
            out["reasoning_content"] = self.reasoning
        if self.calls:
            out["tool_calls"] = self.calls
        return out


def input_messages(
    items: str | Sequence[Any] | None, names: dict[str, str] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The chat messages of ``input`` and, for each, the input item it came from
    (``input[i]``): what an error about ``messages[k]`` names instead.

    ``names`` maps the call ids of earlier function calls to their names (a tool message
    carries its function's name); the calls read here are added to it.
    """
    if items is None:
        return [], []
    if isinstance(items, str):
        return [{"role": "user", "content": items}], ["input"]
    names = {} if names is None else names
    messages: list[dict[str, Any]] = []
    sources: list[str] = []
    turn: _Turn | None = None

    def flush() -> None:
        nonlocal turn
        if turn is not None:
            messages.append(turn.message())
            sources.append(turn.source)
            turn = None

    for i, item in enumerate(items):
        where = f"input[{i}]"
        if isinstance(item, Unsupported):
            raise APIError(
                400,
                f"input items of type {item.type!r} are not supported (message, function_call, "
                "function_call_output and reasoning are; send items themselves, not references)",
                param=f"{where}.type",
                code="unsupported_value",
            )
        if isinstance(item, MessageItem) and item.role != "assistant":
            flush()
            messages.append({"role": item.role, "content": _text(item.content, f"{where}.content")})
            sources.append(where)
        elif isinstance(item, FunctionCallOutputItem):
            flush()
            message = {
                "role": "tool",
                "tool_call_id": item.call_id,
                "content": _text(item.output, f"{where}.output"),
            }
            if item.call_id in names:
                message["name"] = names[item.call_id]
            messages.append(message)
            sources.append(where)
        else:  # the assistant's side: one reply's items, in the order the model wrote them
            if turn is not None and isinstance(item, MessageItem) and turn.last_message:
                flush()  # two messages in a row: two turns (e.g. commentary, then an answer)
            if turn is None:
                turn = _Turn(where)
            turn.last_message = isinstance(item, MessageItem)
            if isinstance(item, ReasoningItem):
                parts = item.content if item.content else item.summary
                text = "".join(p.text for p in parts)
                turn.reasoning = text if turn.reasoning is None else turn.reasoning + text
            elif isinstance(item, MessageItem):
                text = _text(item.content, f"{where}.content")
                turn.content = text if turn.content is None else turn.content + text
            else:
                assert isinstance(item, FunctionCallItem)
                names[item.call_id] = item.name
                turn.calls.append(
                    {
                        "id": item.call_id,
                        "type": "function",
                        "function": {"name": item.name, "arguments": item.arguments},
                    }
                )
    flush()
    return messages, sources


def reply_messages(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat messages of a reply's output items (as when they are sent back)."""
    return input_messages(_as_items(items))[0]


def _as_items(items: list[dict[str, Any]]) -> list[Any]:
    """Output items as the input items they are when sent back."""
    out: list[Any] = []
    for item in items:
        if item["type"] == "message":
            out.append(MessageItem(role="assistant", content=item["content"][0]["text"]))
        elif item["type"] == "reasoning":
            out.append(
                ReasoningItem.model_validate({"type": "reasoning", "content": item["content"]})
            )
        else:
            out.append(
                FunctionCallItem(
                    type="function_call",
                    call_id=item["call_id"],
                    name=item["name"],
                    arguments=item["arguments"],
                )
            )
    return out


_MESSAGE_REF = re.compile(r"\bmessages\[(\d+)\]")
#: Chat field paths → the Responses request's.
_RENAMES = (
    (re.compile(r"\btools\[(\d+)\]\.function\."), r"tools[\1]."),
    (re.compile(r"\bresponse_format\.json_schema\."), "text.format."),
    (re.compile(r"\bresponse_format\b"), "text.format"),
)


def located(error: APIError, sources: Sequence[str]) -> APIError:
    """``error`` naming the Responses request's fields (``input[2]``, ``tools[0].name``)
    instead of the chat messages and tools they were translated to."""

    def field_of(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return sources[index] if index < len(sources) else match.group(0)

    def rewrite(text: str) -> str:
        if text == "messages" or text.startswith("messages: "):  # the conversation as a whole
            text = "input" + text[len("messages") :]
        text = _MESSAGE_REF.sub(field_of, text)
        for pattern, name in _RENAMES:
            text = pattern.sub(name, text)
        return text

    param = rewrite(error.param) if error.param else error.param
    return APIError(
        error.status, rewrite(error.message), type=error.type, param=param, code=error.code
    )
