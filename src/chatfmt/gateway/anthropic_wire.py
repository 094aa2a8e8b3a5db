"""Anthropic's Messages API replies: a :class:`~.generation.Generation`'s typed deltas as
content blocks — the events of a stream (:func:`events`) or a whole ``message``
(:func:`complete`) — with ``stop_reason`` and ``usage``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from .. import fastjson
from ..errors import ChatFmtError
from ..parsing import ContentDelta, Delta, ReasoningDelta, ToolCallDelta
from .anthropic import error_body
from .chat import prompt_tokens
from .errors import APIError, api_error
from .events import Last
from .generation import Generation
from .signature import ThinkingSigner

Event = tuple[str, dict[str, Any]]


class BlockWriter:
    """A reply's deltas as Anthropic content blocks: the stream events of each delta
    (:meth:`feed`, :meth:`close`) and, with ``keep``, the finished blocks (:attr:`content`).

    A block opens when the kind of delta changes (thinking, text, a new tool call) and the
    previous one closes; a thinking block closes with its signature (``signature_delta``).
    Text that is only whitespace before a block opens (between ``</think>`` and a call, say)
    is left out; calls from index ``max_calls`` on are dropped
    (``disable_parallel_tool_use``).
    """

    def __init__(
        self, signer: ThinkingSigner, max_calls: int | None = None, *, keep: bool = False
    ) -> None:
        self.signer = signer
        self.max_calls = max_calls
        self.keep = keep
        self.index = -1
        self.kind: str | None = None  # "thinking", "text", "tool_use" (the open block)
        self.call = -1  # the open tool call's index
        self.parts: list[str] = []  # the open block's text (thinking, text, arguments)
        self.space = ""  # whitespace held back before a text block opens
        self.content: list[dict[str, Any]] = []
        self._call: dict[str, Any] = {}
        #: Whether the reply was cut by ``max_tokens`` (then a call cut short has ``input: {}``).
        self.cut = False

    def _open(self, kind: str, block: dict[str, Any]) -> list[Event]:
        events = self.close()
        self.index += 1
        self.kind = kind
        self.parts = []
        if kind == "tool_use":
            self._call = block
        event = {"type": "content_block_start", "index": self.index, "content_block": block}
        events.append(("content_block_start", event))
        return events

    def _delta(self, delta: dict[str, Any]) -> Event:
        return (
            "content_block_delta",
            {"type": "content_block_delta", "index": self.index, "delta": delta},
        )

    def feed(self, delta: Delta) -> list[Event]:
        """The events of one parser delta."""
        if isinstance(delta, ContentDelta):
            text = delta.text
            if self.kind != "text":
                if not text.strip():
                    self.space += text
                    return []
                text, self.space = self.space + text, ""
                events = self._open("text", {"type": "text", "text": ""})
            else:
                events = []
            self.parts.append(text)
            events.append(self._delta({"type": "text_delta", "text": text}))
            return events
        if isinstance(delta, ReasoningDelta):
            if not delta.text:
                return []
            events = []
            if self.kind != "thinking":
                block = {"type": "thinking", "thinking": "", "signature": ""}
                events = self._open("thinking", block)
            self.parts.append(delta.text)
            events.append(self._delta({"type": "thinking_delta", "thinking": delta.text}))
            return events
        return self._tool(delta)

    def _tool(self, delta: ToolCallDelta) -> list[Event]:
        if delta.code or (self.max_calls is not None and delta.index >= self.max_calls):
            return []  # code-interpreter calls cannot be offered through this API
        events = []
        if delta.id is not None:
            self.space = ""
            block = {"type": "tool_use", "id": delta.id, "name": delta.name or "", "input": {}}
            events = self._open("tool_use", block)
            self.call = delta.index
        if delta.text and self.kind == "tool_use" and self.call == delta.index:
            self.parts.append(delta.text)
            events.append(self._delta({"type": "input_json_delta", "partial_json": delta.text}))
        return events

    def close(self) -> list[Event]:
        """The events that close the open block (none if no block is open)."""
        if self.kind is None:
            return []
        events: list[Event] = []
        text = "".join(self.parts)
        block: dict[str, Any] | None = None
        if self.kind == "thinking":
            signature = self.signer.sign(text)
            events.append(self._delta({"type": "signature_delta", "signature": signature}))
            block = {"type": "thinking", "thinking": text, "signature": signature}
        elif not self.keep:  # streamed: the events were all there is to it
            pass
        elif self.kind == "text":
            block = {"type": "text", "text": text}
        else:
            block = {**self._call, "input": _input(text, self._call, self.cut)}
        if self.keep and block is not None:
            self.content.append(block)
        events.append(("content_block_stop", {"type": "content_block_stop", "index": self.index}))
        self.kind = None
        return events


def _input(arguments: str, call: dict[str, Any], cut: bool = False) -> dict[str, Any]:
    """A tool call's ``input`` object: ``{}`` for a call cut short by ``max_tokens``
    (``cut``), else an :class:`APIError` if the model wrote no JSON object."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        value = {} if cut else None
    if not isinstance(value, dict):
        raise APIError(
            500,
            f"the model's call of {call['name']!r} has arguments that are not a JSON object: "
            f"{arguments[:400]!r}",
            type="model_error",
            code="invalid_model_output",
        )
    return value


def stop_reason(generation: Generation, stops: Sequence[str]) -> tuple[str, str | None]:
    """``stop_reason`` and ``stop_sequence``: ``tool_use``, ``max_tokens``,
    ``stop_sequence`` (with the request's sequence that matched: as the engine reports it,
    else the one the text ends with) or ``end_turn``."""
    finish = generation.finish_reason
    if finish == "tool_calls":
        return "tool_use", None
    if finish == "length":
        return "max_tokens", None
    if stops:
        matched = generation.turn.stop_word
        if matched not in stops:
            text = generation.text
            matched = next((s for s in stops if text.endswith(s)), None)
        if matched is not None:
            return "stop_sequence", matched
    return "end_turn", None


async def _usage(generation: Generation, input_tokens: int | None) -> dict[str, int]:
    """``usage``: the prompt's tokens (as counted before generation, else the engine's, else
    the tokenizer's), the reply's and the engine's cached prompt tokens (0 when unreported)."""
    usage = await generation.counted_usage()
    turn = generation.turn.usage
    if input_tokens is None:
        if usage is not None and usage.prompt_tokens is not None:
            input_tokens = usage.prompt_tokens
        else:
            input_tokens = await prompt_tokens(generation.prepared)
    if usage is not None and usage.completion_tokens is not None:
        output = usage.completion_tokens
    else:
        output = (turn.completion_tokens or 0) if turn is not None else 0
    cached = turn.cached_tokens if turn is not None else None
    return {
        "input_tokens": input_tokens,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached or 0,
    }


def _message(model: str, content: list[dict[str, Any]], usage: dict[str, int]) -> dict[str, Any]:
    return {
        "id": "msg_" + secrets.token_hex(12),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }


async def complete(
    generation: Generation, signer: ThinkingSigner, stops: Sequence[str]
) -> dict[str, Any]:
    """A whole ``message`` (an :class:`APIError` if the reply is invalid)."""
    deltas = await generation.run()
    writer = BlockWriter(signer, generation.max_calls, keep=True)
    for delta in deltas:
        writer.feed(delta)
    writer.cut = generation.turn.truncated
    writer.close()
    message = _message(
        generation.prepared.entry.name, writer.content, await _usage(generation, None)
    )
    message["stop_reason"], message["stop_sequence"] = stop_reason(generation, stops)
    return message


#: A ``text_delta`` event of block ``%d``, up to the text's JSON (as :func:`sse` writes it).
_TEXT_DELTA = (
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
    b'"delta":{"type":"text_delta","text":'
)


def sse(name: str, data: dict[str, Any]) -> bytes:
    """One server-sent event as Anthropic writes them: ``event:`` and ``data:``."""
    return b"event: " + name.encode() + b"\ndata: " + fastjson.dumps(data) + b"\n\n"


async def events(
    generation: Generation, signer: ThinkingSigner, stops: Sequence[str], input_tokens: int
) -> AsyncGenerator[bytes, None]:
    """The events of a started generation: ``message_start``, ``ping``, the content blocks,
    ``message_delta`` (stop reason, usage), ``message_stop``; one write per backend chunk
    (the first with ``message_start`` and ``ping``; the last, :class:`~.events.Last`, with
    the closing events).

    A failure after the first event is one ``error`` event, and the stream ends; so is an
    invalid reply, instead of ``message_delta`` (the client's SDK raises it).
    """
    writer = BlockWriter(signer, generation.max_calls)
    start_usage = {
        "input_tokens": input_tokens,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    start = _message(generation.prepared.entry.name, [], start_usage)
    feed = writer.feed
    dumps = fastjson.dumps
    head, head_at = b"", -1  # the open text block's delta event, up to its text
    out: list[bytes] = []
    try:
        out.append(sse("message_start", {"type": "message_start", "message": start}))
        out.append(sse("ping", {"type": "ping"}))
        async for batch in generation.batches():  # the hot loop: one pass per backend chunk
            for delta in batch:
                if type(delta) is ContentDelta and writer.kind == "text":
                    # text into the open block (not kept: the writer keeps nothing here)
                    if head_at != writer.index:
                        head, head_at = _TEXT_DELTA % writer.index, writer.index
                    out.append(head + dumps(delta.text) + b"}}\n\n")
                    continue
                for name, data in feed(delta):
                    out.append(sse(name, data))
            if out:
                yield b"".join(out)
                out = []
        invalid = generation.problem()
        if invalid is not None:
            out.append(sse("error", error_body(invalid)))
            yield Last(b"".join(out))
            return
        writer.cut = generation.turn.truncated
        for name, data in writer.close():
            out.append(sse(name, data))
        reason, sequence = stop_reason(generation, stops)
        usage = await _usage(generation, input_tokens)
        end = {"stop_reason": reason, "stop_sequence": sequence}
        final = {
            "output_tokens": usage["output_tokens"],
            "cache_read_input_tokens": usage["cache_read_input_tokens"],
        }
        out.append(sse("message_delta", {"type": "message_delta", "delta": end, "usage": final}))
        out.append(sse("message_stop", {"type": "message_stop"}))
        yield Last(b"".join(out))
    except ChatFmtError as exc:
        out.append(sse("error", error_body(api_error(exc))))
        yield Last(b"".join(out))
    except APIError as exc:
        out.append(sse("error", error_body(exc)))
        yield Last(b"".join(out))
    finally:
        await generation.aclose()
