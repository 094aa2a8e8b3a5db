"""The engine pool under a fault: two engines in their own processes, one killed mid-run.

Requests that had not started streaming when the engine died are served by the other one
(no client sees an error; whole replies being generated are generated again); streams cut
midway end with the API's own error event; the dead engine is taken out, and probed back in
once it runs again; nothing hangs (every wait is bounded by a
timeout, nothing is timed). Every chat API the gateway serves is exercised: chat
completions, and the Responses and Anthropic Messages APIs where the app has their routes.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import chatfmt  # noqa: E402
from _fake_server import gateway  # noqa: E402
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402
from chatfmt.backends.pool import PoolBackend, PoolPolicy  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402
from chatfmt.tokens import load_tokenizer  # noqa: E402

from _support import ROOT, SHARED  # noqa: E402

#: Every request must be answered within this many seconds (a hang fails the test).
TIMEOUT = 60.0
#: Events per stream and the milliseconds between them: streams long enough to be cut.
TOKENS, INTERVAL_MS = 40, 25

Events = list[Any]


def _dicts(events: Events) -> list[dict[str, Any]]:
    return [e for e in events if isinstance(e, dict)]


def _types(events: Events) -> list[Any]:
    """The ``type`` of each JSON event (a closing ``[DONE]``, if any, left out)."""
    return [e.get("type") for e in _dicts(events)]


@dataclass(frozen=True)
class API:
    """How one chat API is asked, and how its answers read."""

    path: str
    body: Callable[[str, bool], dict[str, Any]]
    text: Callable[[Events], str]  # a stream's text
    completed: Callable[[Events], bool]  # the stream ended as it should
    cut: Callable[[Events], bool]  # the stream ended with the API's error event
    whole_text: Callable[[dict[str, Any]], str]


def _question(tag: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"Who am I? {tag}"}]


CHAT = API(
    "/v1/chat/completions",
    lambda tag, stream: {"model": "m", "messages": _question(tag), "stream": stream},
    lambda events: "".join(
        c["delta"].get("content") or "" for e in _dicts(events) for c in e.get("choices", ())
    ),
    lambda events: (
        events[-1:] == ["[DONE]"]
        and [c["finish_reason"] for e in _dicts(events) for c in e["choices"] if c["finish_reason"]]
        == ["length"]
    ),
    lambda events: bool(events) and isinstance(events[-1], dict) and "error" in events[-1],
    lambda answer: answer["choices"][0]["message"]["content"],
)
RESPONSES = API(
    "/v1/responses",
    lambda tag, stream: {"model": "m", "input": f"Who am I? {tag}", "stream": stream},
    lambda events: "".join(
        e["delta"] for e in _dicts(events) if e.get("type") == "response.output_text.delta"
    ),
    lambda events: _types(events)[-1:] in (["response.completed"], ["response.incomplete"]),
    lambda events: _types(events)[-2:] == ["error", "response.failed"],
    lambda answer: "".join(
        part["text"]
        for item in answer["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    ),
)
MESSAGES = API(
    "/v1/messages",
    lambda tag, stream: {
        "model": "m",
        "max_tokens": 2 * TOKENS,
        "messages": _question(tag),
        "stream": stream,
    },
    lambda events: "".join(
        e["delta"].get("text", "") for e in _dicts(events) if e.get("type") == "content_block_delta"
    ),
    lambda events: _types(events)[-1:] == ["message_stop"],
    lambda events: _types(events)[-1:] == ["error"],
    lambda answer: "".join(b["text"] for b in answer["content"] if b["type"] == "text"),
)


def _engine_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_sse_engine", ROOT / "benchmarks/_sse_engine.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def engines() -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    module = _engine_module()
    started = [module.start(TOKENS, INTERVAL_MS) for _ in range(2)]
    try:
        yield started
    finally:
        for proc, _url in started:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def served(
    engines: list[tuple[subprocess.Popen[bytes], str]],
) -> Iterator[tuple[str, list[API], PoolBackend]]:
    """The gateway's URL, the chat APIs it serves, and its pool."""
    members = [OpenAICompletionsBackend(url, model="fake", kind="generic") for _, url in engines]
    # no slack for prefix affinity (the prompts share a system prompt): spread evenly
    pool = PoolBackend(members, policy=PoolPolicy(probe_delay=0.2, affinity_slack=0))
    entry = ModelEntry("m", pool, chatfmt.get_template("qwen2.5"))
    paths = {getattr(route, "path", None) for route in create_app({"m": entry}).routes}
    apis = [api for api in (CHAT, RESPONSES, MESSAGES) if api.path in paths]
    if MESSAGES in apis:  # its input_tokens come from a tokenizer (the engine has none)
        entry.tokenizer = load_tokenizer(SHARED / "tokenizers" / "qwen3")
    app = create_app({"m": entry})
    with gateway(app) as url:
        yield url, apis, pool


class Stream:
    """One streamed request: its data events, and an event set at the model's first words."""

    def __init__(self, api: API, tag: str) -> None:
        self.api = api
        self.tag = tag
        self.events: Events = []
        self.status = 0
        self.streaming = asyncio.Event()

    async def run(self, client: Any, url: str) -> None:
        body = self.api.body(self.tag, True)
        async with client.stream("POST", url + self.api.path, json=body) as resp:
            self.status = resp.status_code
            async for line in resp.aiter_lines():
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                self.events.append(data if data == "[DONE]" else json.loads(data))
                if self.api.text(self.events):
                    self.streaming.set()
        self.streaming.set()

    @property
    def completed(self) -> bool:
        return self.status == 200 and self.api.completed(self.events)

    @property
    def cut(self) -> bool:
        return self.status == 200 and self.api.cut(self.events)


@pytest.mark.slow
def test_an_engine_killed_mid_run(
    engines: list[tuple[subprocess.Popen[bytes], str]],
    served: tuple[str, list[API], PoolBackend],
) -> None:
    base, apis, pool = served

    def whole(client: Any, api: API, tag: str) -> Any:
        return client.post(base + api.path, json=api.body(tag, False))

    async def run() -> tuple[list[Stream], list[Stream], list[tuple[str, API, Any]]]:
        limits = httpx.Limits(max_connections=200)
        async with httpx.AsyncClient(timeout=TIMEOUT, limits=limits) as client:
            # whole replies being generated when the engine dies: generated again
            early = [
                (f"req-{300 + 10 * k + i}", api) for k, api in enumerate(apis) for i in range(2)
            ]
            begun = [asyncio.ensure_future(whole(client, api, tag)) for tag, api in early]
            first = [
                Stream(api, f"req-{10 * k + i}") for k, api in enumerate(apis) for i in range(4)
            ]
            running = [asyncio.create_task(s.run(client, base)) for s in first]
            await asyncio.wait_for(asyncio.gather(*(s.streaming.wait() for s in first)), TIMEOUT)
            engines[0][0].kill()  # mid-run: every first-wave stream has started
            engines[0][0].wait(timeout=10)
            # requests begun after the kill: some go to the dead engine first
            second = [
                Stream(api, f"req-{100 + 10 * k + i}")
                for k, api in enumerate(apis)
                for i in range(4)
            ]
            running += [asyncio.create_task(s.run(client, base)) for s in second]
            late = [
                (f"req-{200 + 10 * k + i}", api) for k, api in enumerate(apis) for i in range(2)
            ]
            wholes = [whole(client, api, tag) for tag, api in late]
            raw = [  # the plain completions API goes through the same pool
                client.post(
                    base + "/v1/completions",
                    json={"model": "m", "prompt": f"req-{400 + i}", "max_tokens": TOKENS},
                )
                for i in range(2)
            ]
            answers = await asyncio.wait_for(asyncio.gather(*wholes, *raw, *begun), TIMEOUT)
            await asyncio.wait_for(asyncio.gather(*running), TIMEOUT)
        asked = [*late, *[(f"req-{400 + i}", None) for i in range(2)], *early]
        return first, second, [(t, a, r) for (t, a), r in zip(asked, answers, strict=True)]

    first, second, answers = asyncio.run(run())
    # Requests that had not started streaming when the engine died: all served, each its own.
    for stream in second:
        assert stream.completed, (stream.api.path, stream.status, stream.events)
        assert stream.api.text(stream.events).startswith(stream.tag + " ")
    # And so are whole replies, begun before the kill or after.
    for tag, api, answer in answers:
        assert answer.status_code == 200, answer.text
        text = answer.json()["choices"][0]["text"] if api is None else api.whole_text(answer.json())
        assert text.startswith(tag + " ")
    # Streams on the killed engine end with their API's error event; the others complete.
    cut = [s for s in first if not s.completed]
    assert cut, "the killed engine served none of the first wave"
    for stream in cut:
        assert stream.cut, (stream.api.path, stream.status, stream.events)
    assert len(cut) < len(first)  # the first wave was spread over both engines

    # The dead engine is taken out (at the latest after a few more requests fail on it
    # and are retried), and probed back in once it runs again on its port.
    dead = pool.members[0]
    with httpx.Client(timeout=TIMEOUT) as client:
        for i in range(4 * pool.policy.max_failures):
            if not dead.healthy:
                break
            answer = client.post(base + CHAT.path, json=CHAT.body(f"req-{500 + i}", False))
            assert answer.status_code == 200, answer.text
        assert not dead.healthy
        port = int(engines[0][1].rsplit(":", 1)[1].split("/")[0])
        script = str(ROOT / "benchmarks/_sse_engine.py")
        again = subprocess.Popen([sys.executable, script, str(port), str(TOKENS), "0"])
        engines.append((again, engines[0][1]))  # stopped by the fixture
        deadline = time.monotonic() + TIMEOUT
        while not dead.healthy:
            assert time.monotonic() < deadline, "the engine was not probed back in"
            time.sleep(0.05)
        answer = client.post(base + CHAT.path, json=CHAT.body("req-600", False))
        assert answer.status_code == 200, answer.text
