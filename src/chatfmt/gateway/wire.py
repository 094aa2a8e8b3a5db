"""OpenAI's wire shapes: parser deltas as clients get them, and the objects that carry them.

The one place where the parser's deltas become what is sent (``chat.completion``,
``chat.completion.chunk`` as server-sent events), with the shapes of
:mod:`chatfmt.parsing.openai_wire`: chatfmt's own flags are removed here.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Any

from .. import fastjson
from ..parsing import Delta, merge_deltas
from ..parsing.openai_wire import delta_dict, message_dict


def completion_id() -> str:
    return "chatcmpl-" + secrets.token_hex(12)


def wire_delta(delta: Delta, max_calls: int | None = None) -> dict[str, Any] | None:
    """A parser delta as sent to clients (``None`` if nothing is left of it).

    chatfmt's ``error`` flags are removed: an invalid call (arguments that are not a JSON
    object, a call cut off) is sent as the model wrote it, and clients validate arguments,
    as with any OpenAI model. Calls from index ``max_calls`` on are dropped
    (``parallel_tool_calls: false``).
    """
    return delta_dict(delta, errors=False, max_calls=max_calls)


def wire_message(deltas: Iterable[Delta], max_calls: int | None = None) -> dict[str, Any]:
    """The assistant message of a whole reply, as sent to clients (see :func:`wire_delta`)."""
    return message_dict(merge_deltas(deltas), errors=False, max_calls=max_calls)


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """An OpenAI ``usage`` object."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def chat_completion(
    model: str,
    message: dict[str, Any],
    finish_reason: str | None,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A whole ``chat.completion`` object (``usage`` left out when unknown)."""
    return chat_completion_n(model, [(message, finish_reason)], usage)


def chat_completion_n(
    model: str,
    replies: Sequence[tuple[dict[str, Any], str | None]],
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A whole ``chat.completion`` object of several choices (message, finish reason)."""
    response: dict[str, Any] = {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": i, "message": message, "finish_reason": finish, "logprobs": None}
            for i, (message, finish) in enumerate(replies)
        ],
    }
    if usage is not None:
        response["usage"] = usage
    return response


def sse(data: Any) -> bytes:
    """One server-sent event (``data`` as JSON, or a string as it is)."""
    if isinstance(data, str):
        return f"data: {data}\n\n".encode()
    return b"data: " + fastjson.dumps(data) + b"\n\n"


#: The event that ends a stream.
DONE = sse("[DONE]")


class ChunkWriter:
    """The ``chat.completion.chunk`` events of one streamed reply (one id, one time).

    The bytes around each chunk's ``delta`` are made once per reply: a chunk costs one
    encoding of its delta."""

    __slots__ = ("_after", "_before", "head")

    def __init__(self, model: str) -> None:
        self.head = {
            "id": completion_id(),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        self._before = (
            b"data: " + fastjson.dumps(self.head)[:-1] + b',"choices":[{"index":0,"delta":'
        )
        self._after = b',"logprobs":null,"finish_reason":null}]}\n\n'

    def delta(
        self, delta: dict[str, Any], finish_reason: str | None = None, index: int = 0
    ) -> bytes:
        """One chunk carrying ``delta`` of choice ``index`` (and the finish reason of its
        last one)."""
        if finish_reason is None and index == 0:  # most chunks: the head is encoded once
            return self._before + fastjson.dumps(delta) + self._after
        choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return sse({**self.head, "choices": [choice]})

    def start(self, index: int = 0) -> bytes:
        """The first chunk of choice ``index``: the assistant role."""
        return self.delta({"role": "assistant", "content": ""}, index=index)

    def usage(self, usage: dict[str, int] | None) -> bytes:
        """The usage chunk (``stream_options.include_usage``): no choices."""
        return sse({**self.head, "choices": [], "usage": usage})
