"""How a streamed reply is written: one write per backend chunk (the role chunk with the first
content), and the finish, ``[DONE]`` and the end of the body in one last write.

The application is called directly (ASGI) so that each write is one ``send`` to count."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("starlette")

import chatfmt
from chatfmt.backends import ScriptedBackend
from chatfmt.backends.base import CompletionChunk, CompletionRequest
from chatfmt.backends.scripted import ScriptedReply
from chatfmt.gateway import ModelEntry, create_app

QWEN = chatfmt.get_template("qwen2.5")


async def call(app: Any, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages the application sends for one request."""
    raw = json.dumps(body).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    received = False
    never = asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def test_one_write_per_backend_chunk_and_the_end_in_the_last() -> None:
    text = "Hello, world! Bye."
    size = 4
    backend = ScriptedBackend([ScriptedReply(text, chunk_size=size)])
    app = create_app({"qwen": ModelEntry("qwen", backend, QWEN)})
    body = {"model": "qwen", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    sent = asyncio.run(call(app, "/v1/chat/completions", body))
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    writes = [m for m in sent if m["type"] == "http.response.body"]
    chunks = len(range(0, len(text), size))
    assert len(writes) == chunks + 1
    assert writes[0]["body"].count(b"data: ") == 2  # the role chunk and the first content
    assert all(w["more_body"] for w in writes[:-1])
    assert writes[-1]["more_body"] is False and writes[-1]["body"].endswith(b"data: [DONE]\n\n")
    events = [
        json.loads(line[6:])
        for w in writes
        for line in w["body"].decode().split("\n\n")
        if line.startswith("data: {")
    ]
    content = "".join(e["choices"][0]["delta"].get("content") or "" for e in events)
    assert content == text
    assert events[-1]["choices"][0]["finish_reason"] == "stop"


def _events(body: bytes) -> list[tuple[str | None, bytes]]:
    """A body's events: (``event:`` name, raw ``data``)."""
    out = []
    for block in body.split(b"\n\n"):
        if not block:
            continue
        name = None
        if block.startswith(b"event: "):
            head, _, block = block.partition(b"\n")
            name = head[7:].decode()
        assert block.startswith(b"data: ")
        out.append((name, block[6:]))
    return out


class CountingBackend(ScriptedBackend):
    """A scripted engine with a tokenize endpoint (one id per word)."""

    async def tokenize(self, text: str) -> list[int]:
        return list(range(len(text.split())))


@pytest.mark.parametrize(
    ("path", "extra"),
    [("/v1/responses", {"max_output_tokens": 64}), ("/v1/messages", {"max_tokens": 64})],
)
def test_responses_and_messages_events_are_written_as_their_objects_encode(
    path: str, extra: dict[str, Any]
) -> None:
    # the text deltas into an open item take a pre-encoded path: byte for byte the same
    # events as the generic one (each event's data is its object's compact JSON), at most
    # one write per backend chunk, sequence numbers counting every event
    text = '<think>Let me see.</think>Hello, "world"! Bye é \u2028.'
    size = 5
    qwen3 = chatfmt.get_template("qwen3")
    backend = CountingBackend([ScriptedReply(text, chunk_size=size)])
    app = create_app({"qwen3": ModelEntry("qwen3", backend, qwen3)})
    ask = "Hi"
    body: dict[str, Any] = {"model": "qwen3", "stream": True, **extra}
    if path == "/v1/responses":
        body["input"] = ask
    else:
        body["messages"] = [{"role": "user", "content": ask}]
    sent = asyncio.run(call(app, path, body))
    writes = [m["body"] for m in sent if m["type"] == "http.response.body"]
    assert all(writes) and len(writes) <= len(range(0, len(text), size)) + 1  # at most one each
    events = [e for w in writes for e in _events(w) if e[1] != b"[DONE]"]
    decoded = [json.loads(data) for _name, data in events]
    for (name, data), event in zip(events, decoded, strict=True):
        assert name == event["type"]
        assert data == json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
    if path == "/v1/responses":
        assert [e["sequence_number"] for e in decoded] == list(range(len(decoded)))
        deltas = [e["delta"] for e in decoded if e["type"] == "response.output_text.delta"]
    else:
        deltas = [
            e["delta"]["text"]
            for e in decoded
            if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
        ]
    assert "".join(deltas) == text.split("</think>")[1]


def test_a_messages_stream_asks_the_engine_for_the_prompt_count_once() -> None:
    # no tokenizer and no usage from the engine: its tokenize endpoint counts the prompt
    # (while the request starts) and the reply; the prompt is not counted a second time
    asked: list[str] = []

    class Counting(CountingBackend):
        async def tokenize(self, text: str) -> list[int]:
            asked.append(text)
            return await super().tokenize(text)

        async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
            async for chunk in super().stream(request):
                yield replace(chunk, usage=None)  # an engine that reports no usage

    reply = "Hello there, world."
    backend = Counting([ScriptedReply(reply, chunk_size=4)])
    app = create_app({"qwen": ModelEntry("qwen", backend, QWEN)})
    body = {
        "model": "qwen",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
    }
    sent = asyncio.run(call(app, "/v1/messages", body))
    events = [
        json.loads(data)
        for m in sent
        if m["type"] == "http.response.body"
        for _name, data in _events(m["body"])
    ]
    prompt = backend.prompts[0]
    assert asked.count(prompt) == 1 and len(asked) == 2  # the prompt, then the reply
    start = events[0]["message"]["usage"]["input_tokens"]
    assert start == len(prompt.split())
    assert events[-2]["type"] == "message_delta"
    assert events[-2]["usage"]["output_tokens"] == len(reply.split())
