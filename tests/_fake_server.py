"""A fake OpenAI-compatible completions server on 127.0.0.1, started and stopped by the tests.

It replays scripted replies, honours ``stop`` like a real engine (the stop word is not
returned unless ``include_stop`` is set; it is named in ``stop_reason``, as vLLM does),
streams server-sent events, and can misbehave on purpose (``mode``): ``"http500"``,
``"garbage"`` (non-JSON body / events), ``"cut"`` (the stream ends without a finish reason),
``"die"`` (the connection is dropped halfway through a stream, as by a killed engine),
``"slow"`` (no data for longer than a read timeout). ``aborted`` counts streams whose client left before the end. ``owned_by`` and
``root_json`` (path → JSON answered at the server's root, e.g. ``/props``) make it look
like a given engine; ``reply_for`` answers each request from its body (a scripted engine
for clients whose requests come in any order).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web

from chatfmt.backends.base import Backend, CompletionChunk, CompletionRequest


class FakeCompletionsServer:
    def __init__(self, replies: list[str] | None = None, *, include_stop: bool = False) -> None:
        self.replies = list(replies or [])
        self.include_stop = include_stop
        self.mode = "ok"
        self.model_id = "fake-model"
        self.chunk_delay = 0.0  # seconds between streamed pieces
        self.chunk_size = 3
        self.requests: list[dict[str, Any]] = []
        self.aborted = 0
        self.port = 0
        self.owned_by: str | None = None
        self.root_json: dict[str, Any] = {}
        #: path → answer of a POST at the server's root (a function of the JSON body), e.g.
        #: an engine's ``/tokenize``; ``root_posts`` records (path, body) of each.
        self.root_post: dict[str, Any] = {}
        self.root_posts: list[tuple[str, Any]] = []
        #: When set, the reply to each request (its JSON body), instead of ``replies`` in order.
        self.reply_for: Callable[[dict[str, Any]], str] | None = None
        self.cached_tokens: int | None = None  # reported as usage.prompt_tokens_details
        self.sends_usage = True  # False: no usage at all (llama-cpp-python's server streams none)
        #: Usage in every streamed chunk when asked (``stream_options.continuous_usage_stats``,
        #: as vLLM and SGLang do); False: the option is ignored.
        self.continuous_usage = True
        #: Every event of a stream in one write (what a reader that fell behind receives).
        self.one_write = False

    def reset(self) -> FakeCompletionsServer:
        """Back to answering normally, with no replies queued and no requests recorded."""
        self.replies.clear()
        self.requests.clear()
        self.mode = "ok"
        self.chunk_delay = 0.0
        self.aborted = 0
        self.cached_tokens = None
        self.continuous_usage = True
        self.one_write = False
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ handlers
    async def models(self, _request: web.Request) -> web.Response:
        model: dict[str, Any] = {"id": self.model_id}
        if self.owned_by is not None:
            model["owned_by"] = self.owned_by
        return web.json_response({"object": "list", "data": [model]})

    async def root(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        if path not in self.root_json:
            return web.Response(status=404, text="not found")
        return web.json_response(self.root_json[path])

    async def post_root(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body = await request.json()
        self.root_posts.append((path, body))
        if path not in self.root_post:
            return web.Response(status=404, text="not found")
        return web.json_response(self.root_post[path](body))

    def _next_text(self, body: dict[str, Any]) -> tuple[str, str, str | None]:
        """The reply, its finish reason and the stop word it ended at (sent as vLLM does)."""
        if self.reply_for is not None:
            text = self.reply_for(body)
        else:
            text = self.replies.pop(0) if self.replies else ""
        max_tokens = body.get("max_tokens")
        stops = [s for s in body.get("stop") or [] if s in text]
        if stops:
            at, word = min((text.find(s), s) for s in stops)
            return (text[: at + len(word)] if self.include_stop else text[:at]), "stop", word
        if isinstance(max_tokens, int) and len(text) > max_tokens:  # 1 char = 1 "token"
            return text[:max_tokens], "length", None
        return text, "stop", None

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        if self.mode == "http500":
            return web.Response(status=500, text="engine exploded")
        if self.mode == "garbage" and not body.get("stream"):
            return web.Response(text="<html>not json</html>", content_type="text/html")
        text, finish, word = self._next_text(body)
        usage: dict[str, Any] = {
            "prompt_tokens": len(body["prompt"]),  # characters stand in for tokens
            "completion_tokens": len(text),
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if not body.get("stream"):
            choice = {"index": 0, "text": text, "finish_reason": finish}
            whole: dict[str, Any] = {"object": "text_completion", "choices": [choice]}
            if self.sends_usage:
                whole["usage"] = usage
            return web.json_response(whole)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        held: list[bytes] = []  # with ``one_write``: the whole body, written at the end

        async def send(obj: Any) -> None:
            data = obj if isinstance(obj, str) else json.dumps(obj)
            if self.one_write:
                held.append(f"data: {data}\n\n".encode())
                if data == "[DONE]":
                    await resp.write(b"".join(held))
                return
            await resp.write(f"data: {data}\n\n".encode())

        if self.mode == "garbage":
            await send("{this is not json")
            return resp
        if self.mode == "slow":
            await asyncio.sleep(2)
            return resp  # the client has given up by now
        await resp.write(b": keep-alive comment\n\n")
        pieces = [text[i : i + self.chunk_size] for i in range(0, len(text), self.chunk_size)]
        options = body.get("stream_options") or {}
        continuous = (
            self.sends_usage
            and self.continuous_usage
            and options.get("include_usage")
            and options.get("continuous_usage_stats")
        )
        sent = 0
        try:
            for i, piece in enumerate(pieces):
                if self.mode == "die" and i == len(pieces) // 2:
                    assert request.transport is not None
                    request.transport.abort()  # no finish, no end of stream: a killed engine
                    return resp
                if self.chunk_delay:
                    await asyncio.sleep(self.chunk_delay)
                chunk: dict[str, Any] = {
                    "choices": [{"index": 0, "text": piece, "finish_reason": None}]
                }
                sent += len(piece)
                if continuous:
                    chunk["usage"] = {**usage, "completion_tokens": sent}
                await send(chunk)
        except ConnectionError:  # the client left early (Ctrl-C): stop generating
            self.aborted += 1
            return resp
        if self.mode == "cut":
            return resp
        last = {"index": 0, "text": "", "finish_reason": finish, "stop_reason": word}
        await send({"choices": [last]})
        if self.sends_usage and (body.get("stream_options") or {}).get("include_usage"):
            await send({"choices": [], "usage": usage})
        await send("[DONE]")
        return resp


@contextmanager
def serve(server: FakeCompletionsServer) -> Iterator[FakeCompletionsServer]:
    """Run ``server`` on 127.0.0.1 (a free port) in a background thread; always stopped."""
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_get("/v1/models", server.models)
    app.router.add_post("/v1/completions", server.completions)
    app.router.add_get("/{tail:.*}", server.root)
    app.router.add_post("/{tail:.*}", server.post_root)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    server.port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@contextmanager
def gateway(app: Any) -> Iterator[str]:
    """Run ``app`` with uvicorn on a free port of 127.0.0.1 in a thread; always stopped."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (yet)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def chatfmt_serve(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, Any]]:
    """Run ``chatfmt serve ARGS`` (this checkout's code) on a free port until ``/health``
    answers; yield its base URL and the process (always stopped; read its stderr after)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import httpx

    port = free_port()
    src = str(Path(__file__).resolve().parent.parent / "src")
    command = [sys.executable, "-m", "chatfmt.cli", "serve", *args]
    command += ["--port", str(port), "--log-level", "warning"]
    environ = {**os.environ, **(env or {}), "PYTHONPATH": src}
    proc = subprocess.Popen(command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1].decode()
            try:
                if httpx.get(base + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "chatfmt serve did not start"
                time.sleep(0.1)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=20)


class StallingBackend(Backend):
    """Sends one chunk, then nothing until its stream is closed (which it records): a model
    that takes its time, for tests of a client that leaves."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        try:
            yield CompletionChunk("Thinking")
            await asyncio.Event().wait()
        finally:
            self.closed.set()
