"""The gateway's own CPU per streamed request, in one process and without sockets: a profile.

The application is called directly (ASGI), its completions backend reads a canned SSE body
(one network read per event, as from an engine that sends one event per decode step) through
the real aiohttp stream reader. What is left out is the kernel's part (the socket writes and
reads, about half of the cost on a VM); what is measured is chatfmt's, Starlette's and the
aiohttp reader's Python code, the part a change to chatfmt can cut. Deterministic enough to
compare two trees on a busy machine (run each a few times).

    python benchmarks/profile_gateway.py [--api chat|responses|messages|all] [--requests 400]
        [--tokens 32] [--concurrency 1] [--profile] [--top 30]

``--concurrency N`` keeps N streams in flight (as many live objects as a loaded server has:
the garbage collector's share grows with them).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvloop
from aiohttp.base_protocol import BaseProtocol
from aiohttp.streams import StreamReader

import chatfmt
from chatfmt.backends.openai import OpenAICompletionsBackend
from chatfmt.gateway import create_app
from chatfmt.gateway.models import ModelEntry

#: Per API: the path and a streamed request body for the tag ``tag``.
APIS: dict[str, tuple[str, Any]] = {
    "chat": (
        "/v1/chat/completions",
        lambda tag: {
            "model": "qwen2.5",
            "messages": [{"role": "user", "content": f"Say {tag}"}],
            "stream": True,
            "max_tokens": 256,
        },
    ),
    "responses": (
        "/v1/responses",
        lambda tag: {
            "model": "qwen2.5",
            "input": f"Say {tag}",
            "stream": True,
            "max_output_tokens": 256,
        },
    ),
    "messages": (
        "/v1/messages",
        lambda tag: {
            "model": "qwen2.5",
            "messages": [{"role": "user", "content": f"Say {tag}"}],
            "stream": True,
            "max_tokens": 256,
        },
    ),
}


def sse_body(tokens: int) -> list[bytes]:
    """The engine's events, one network read each (with vLLM's usage chunk, which the
    gateway asks for)."""
    pieces = ["req-1 "] + [f"w{i} " for i in range(tokens - 1)]
    out = [
        f"data: {json.dumps({'choices': [{'index': 0, 'text': p, 'finish_reason': None}]})}\n\n".encode()
        for p in pieces
    ]
    done = {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
    usage = {"prompt_tokens": 12, "completion_tokens": tokens, "total_tokens": 12 + tokens}
    out.append(f"data: {json.dumps(done)}\n\n".encode())
    out.append(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
    out.append(b"data: [DONE]\n\n")
    return out


class _Transport:
    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


class _Response:
    """The engine's answer: one event fed to the real aiohttp reader per loop iteration,
    as the network delivers them (the reader waits, is woken, reads one)."""

    status = 200
    connection = None  # no connection: the completions client's read deadline is not set

    def __init__(self, events: list[bytes]) -> None:
        self._loop = loop = asyncio.get_running_loop()
        protocol = BaseProtocol(loop)
        protocol.transport = _Transport()  # type: ignore[assignment]  # "connected"
        self.content = StreamReader(protocol, 2**16, loop=loop)
        self._events = iter(events)
        self._handle = loop.call_soon(self._feed)

    def _feed(self) -> None:
        event = next(self._events, None)
        if event is None:
            self.content.feed_eof()
            return
        self.content.feed_data(event)
        self._handle = self._loop.call_soon(self._feed)


class _Tokenized:
    """The engine's ``/tokenize`` answer (vLLM's shape): one id per word."""

    status = 200

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    async def text(self, errors: str = "strict") -> str:
        tokens = list(range(len(str(self.body["prompt"]).split())))
        return json.dumps({"tokens": tokens, "count": len(tokens), "max_model_len": 32768})


class _Session:
    closed = False

    def __init__(self, events: list[bytes]) -> None:
        self.events = events

    @asynccontextmanager
    async def post(self, url: str, **body: Any) -> AsyncIterator[Any]:
        if url.endswith("/tokenize"):  # the Messages API counts the prompt first
            yield _Tokenized(body["json"])
            return
        resp = _Response(self.events)
        try:
            yield resp
        finally:
            resp._handle.cancel()

    async def close(self) -> None:
        pass


async def one(app: Any, path: str, body: bytes) -> int:
    """One streamed request through the ASGI application; the bytes it wrote."""
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
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent = [False]
    never = asyncio.Event()
    written = 0
    status = 0

    async def receive() -> dict[str, Any]:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal written, status
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            written += len(message.get("body", b""))

    await app(scope, receive, send)
    if status != 200:
        raise RuntimeError(f"{path}: HTTP {status}")
    return written


async def run(
    api: str, requests: int, tokens: int, profile: cProfile.Profile | None, concurrency: int = 1
) -> float:
    events = sse_body(tokens)
    # a vLLM-like engine: its /tokenize gives the Messages API its prompt counts
    backend = OpenAICompletionsBackend("http://127.0.0.1:1/v1", model="fake", kind="vllm")
    session = _Session(events)
    backend._client = lambda: session  # type: ignore[method-assign]
    entry = ModelEntry("qwen2.5", backend, chatfmt.get_template("qwen2.5"))
    app = create_app({"qwen2.5": entry})
    path, make = APIS[api]
    bodies = [json.dumps(make(f"req-{i}")).encode() for i in range(requests)]
    for body in bodies[:20]:  # warm up
        await one(app, path, body)
    if profile is not None:
        profile.enable()
    start = time.process_time()
    todo = iter(bodies)

    async def client() -> None:  # one of `concurrency` streams always in flight
        for body in todo:
            await one(app, path, body)

    await asyncio.gather(*(client() for _ in range(concurrency)))
    spent = time.process_time() - start
    if profile is not None:
        profile.disable()
    return spent / requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--api", choices=(*APIS, "all"), default="chat")
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="streams in flight at once (each client's next request when its last ended)",
    )
    ap.add_argument("--profile", action="store_true", help="print a cProfile of the last round")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    apis = list(APIS) if args.api == "all" else [args.api]
    for api in apis:
        best = float("inf")
        profile = None
        for r in range(args.rounds):
            profile = cProfile.Profile() if args.profile and r == args.rounds - 1 else None
            try:
                spent = uvloop.run(run(api, args.requests, args.tokens, profile, args.concurrency))
            except RuntimeError as exc:
                print(f"{api}: {exc}")
                break
            if profile is None:
                best = min(best, spent)
        else:
            print(
                f"{api}: {best * 1000:.3f} ms of CPU per streamed request "
                f"({args.tokens} events; best of {args.rounds - bool(args.profile)} rounds)"
            )
        if profile is not None:
            pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
