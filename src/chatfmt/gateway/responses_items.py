"""The output items of a Responses reply, and the streamed events that build them, from
the parser's typed deltas (:mod:`chatfmt.parsing`)."""

from __future__ import annotations

import secrets
from typing import Any

from ..parsing import ContentDelta, Delta, ReasoningDelta


def new_id(prefix: str) -> str:
    """A fresh id such as ``resp_…``, ``msg_…``, ``fc_…``."""
    return f"{prefix}_{secrets.token_hex(12)}"


class OutputItems:
    """The output items of one reply, built from the parser's deltas as they come, and the
    streamed events that build them (without ``sequence_number``).

    An item is open until a delta of another kind comes: reasoning, a message, one function
    call per call. Whitespace alone opens no message: it waits for text (then opens one with
    it) or the end, where it is dropped if the reply has calls and no text — the content
    chat completions returns (:func:`chatfmt.parsing.merge_deltas`) is the text of the
    message items, concatenated. Calls from index ``max_calls`` on are dropped
    (``parallel_tool_calls: false``).
    """

    def __init__(self, max_calls: int | None = None) -> None:
        self.max_calls = max_calls
        self.items: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None
        self._text: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._pending = ""  # whitespace content not yet in a message

    def feed(self, delta: Delta) -> list[dict[str, Any]]:
        """The events of one delta."""
        if isinstance(delta, ContentDelta):
            return self._content(delta.text)
        if isinstance(delta, ReasoningDelta):
            return self._reasoning(delta.text)
        if delta.code or (self.max_calls is not None and delta.index >= self.max_calls):
            return []  # only function tools are offered; calls past the one allowed
        events: list[dict[str, Any]] = []
        if delta.id is not None and delta.index not in self._calls:
            events += self._close("completed")
            call: dict[str, Any] = {
                "id": new_id("fc"),
                "type": "function_call",
                "status": "in_progress",
                "call_id": delta.id,
                "name": delta.name or "",
                "arguments": "",
            }
            events.append(self._add(call))
            self._calls[delta.index] = call
        item = self._calls.get(delta.index)
        if item is None or not delta.text:
            return events
        if item is self._open:
            self._text.append(delta.text)
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": self._index,
                    "delta": delta.text,
                }
            )
        else:  # a piece of an earlier call (not written by any parser): kept, not streamed
            item["arguments"] += delta.text
        return events

    def more_text(self, text: str) -> tuple[str, int] | None:
        """Non-empty ``text`` added to the open message item, whose id and output index are
        returned: its one event is a ``response.output_text.delta`` the caller writes (the
        stream's hot path, no event dict made). ``None`` (nothing added): no message is
        open, :meth:`feed` the delta."""
        item = self._open
        if item is None or item["type"] != "message" or not text:
            return None
        self._text.append(text)
        return item["id"], len(self.items) - 1

    def close(self, status: str = "completed") -> list[dict[str, Any]]:
        """The events that end the reply's last item (``status``: ``incomplete`` when cut)."""
        events: list[dict[str, Any]] = []
        has_text = any(item["type"] == "message" for item in self.items)
        if self._pending and (has_text or not self._calls):
            events += self._content_text(self._pending)
        self._pending = ""
        return events + self._close(status)

    # ------------------------------------------------------------------ items
    @property
    def _index(self) -> int:
        return len(self.items) - 1

    def _add(self, item: dict[str, Any]) -> dict[str, Any]:
        self.items.append(item)
        self._open = item
        self._text = []
        return {
            "type": "response.output_item.added",
            "output_index": self._index,
            "item": dict(item),
        }

    def _content(self, text: str) -> list[dict[str, Any]]:
        if not text:
            return []
        if self._open is None or self._open["type"] != "message":
            if (self._pending + text).isspace():
                self._pending += text
                return []
            text, self._pending = self._pending + text, ""
        return self._content_text(text)

    def _content_text(self, text: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if self._open is None or self._open["type"] != "message":
            events += self._close("completed")
            item = {
                "id": new_id("msg"),
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            events.append(self._add(item))
            events.append(self._part_event("response.content_part.added", _output_text("")))
        self._text.append(text)
        assert self._open is not None
        events.append(
            {
                "type": "response.output_text.delta",
                "item_id": self._open["id"],
                "output_index": self._index,
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            }
        )
        return events

    def _reasoning(self, text: str) -> list[dict[str, Any]]:
        if not text:
            return []
        events: list[dict[str, Any]] = []
        if self._open is None or self._open["type"] != "reasoning":
            events += self._close("completed")
            item = {"id": new_id("rs"), "type": "reasoning", "summary": [], "content": []}
            events.append(self._add(item))
            events.append(self._part_event("response.content_part.added", _reasoning_text("")))
        self._text.append(text)
        assert self._open is not None
        events.append(
            {
                "type": "response.reasoning.delta",
                "item_id": self._open["id"],
                "output_index": self._index,
                "content_index": 0,
                "delta": text,
            }
        )
        return events

    def _part_event(self, kind: str, part: dict[str, Any]) -> dict[str, Any]:
        assert self._open is not None
        return {
            "type": kind,
            "item_id": self._open["id"],
            "output_index": self._index,
            "content_index": 0,
            "part": part,
        }

    def _close(self, status: str) -> list[dict[str, Any]]:
        """The events that end the open item (none if none is open)."""
        item = self._open
        if item is None:
            return []
        self._open = None
        text = "".join(self._text)
        head = {"item_id": item["id"], "output_index": self._index}
        events: list[dict[str, Any]] = []
        if item["type"] == "message":
            part = _output_text(text)
            item["content"] = [part]
            item["status"] = status
            events.append(
                {
                    "type": "response.output_text.done",
                    **head,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                }
            )
            events.append(
                {"type": "response.content_part.done", **head, "content_index": 0, "part": part}
            )
        elif item["type"] == "reasoning":
            part = _reasoning_text(text)
            item["content"] = [part]
            events.append(
                {"type": "response.reasoning.done", **head, "content_index": 0, "text": text}
            )
            events.append(
                {"type": "response.content_part.done", **head, "content_index": 0, "part": part}
            )
        else:
            item["arguments"] += text
            item["status"] = status
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **head,
                    "name": item["name"],
                    "arguments": item["arguments"],
                }
            )
        events.append(
            {"type": "response.output_item.done", "output_index": self._index, "item": item}
        )
        return events


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _reasoning_text(text: str) -> dict[str, Any]:
    return {"type": "reasoning_text", "text": text}
