"""How a streamed reply is written: one write per backend chunk (the role chunk with the first
content), and the finish, ``[DONE]`` and the end of the body in one last write.

The application is called directly (ASGI) so that each write is one ``send`` to count."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("starlette")

import chatfmt
from chatfmt.backends import ScriptedBackend
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
