"""The engine pool under a fault: two engines in their own processes, one killed mid-run.

Requests that had not started streaming when the engine died are served by the other one
(no client sees an error; whole replies being generated are generated again); streams cut midway end with the API's own error event; nothing
hangs (every wait is bounded by a timeout, nothing is timed).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
from collections.abc import Iterator
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

from _support import ROOT  # noqa: E402

#: Every request must be answered within this many seconds (a hang fails the test).
TIMEOUT = 60.0
#: Events per stream and the milliseconds between them: streams long enough to be cut.
TOKENS, INTERVAL_MS = 40, 25


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
def base(engines: list[tuple[subprocess.Popen[bytes], str]]) -> Iterator[str]:
    members = [OpenAICompletionsBackend(url, model="fake", kind="generic") for _, url in engines]
    # no slack for prefix affinity (the prompts share a system prompt): spread evenly
    pool = PoolBackend(members, policy=PoolPolicy(probe_delay=0.2, affinity_slack=0))
    entry = ModelEntry("m", pool, chatfmt.get_template("qwen2.5"))
    with gateway(create_app({"m": entry})) as url:
        yield url


def chat_body(tag: str, stream: bool) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": f"Who am I? {tag}"}],
        "stream": stream,
    }


class Stream:
    """One streamed chat request: its data events, and an event set at the first content."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.events: list[Any] = []
        self.status = 0
        self.streaming = asyncio.Event()

    async def run(self, client: Any, url: str) -> None:
        body = chat_body(self.tag, True)
        async with client.stream("POST", url + "/v1/chat/completions", json=body) as resp:
            self.status = resp.status_code
            async for line in resp.aiter_lines():
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                self.events.append(data if data == "[DONE]" else json.loads(data))
                if len(self.events) >= 2:  # the role, then the model's first words
                    self.streaming.set()
        self.streaming.set()

    @property
    def text(self) -> str:
        return "".join(
            choice["delta"].get("content") or ""
            for event in self.events
            if isinstance(event, dict)
            for choice in event.get("choices", ())
        )

    @property
    def completed(self) -> bool:
        finishes = [
            c["finish_reason"]
            for e in self.events
            if isinstance(e, dict)
            for c in e.get("choices", ())
            if c.get("finish_reason")
        ]
        return self.events[-1:] == ["[DONE]"] and finishes == ["length"]

    @property
    def cut_with_error_event(self) -> bool:
        last = self.events[-1] if self.events else None
        return isinstance(last, dict) and "error" in last and "[DONE]" not in self.events


@pytest.mark.slow
def test_an_engine_killed_mid_run(
    engines: list[tuple[subprocess.Popen[bytes], str]], base: str
) -> None:
    async def run() -> tuple[list[Stream], list[Stream], list[Any], list[Any]]:
        limits = httpx.Limits(max_connections=100)
        async with httpx.AsyncClient(timeout=TIMEOUT, limits=limits) as client:
            early = [  # whole replies being generated when the engine dies: generated again
                client.post(base + "/v1/chat/completions", json=chat_body(f"req-{300 + i}", False))
                for i in range(4)
            ]
            first = [Stream(f"req-{i}") for i in range(6)]
            running = [asyncio.create_task(s.run(client, base)) for s in first]
            begun = [asyncio.ensure_future(request) for request in early]
            await asyncio.wait_for(asyncio.gather(*(s.streaming.wait() for s in first)), TIMEOUT)
            engines[0][0].kill()  # mid-run: every first-wave stream has started
            engines[0][0].wait(timeout=10)
            second = [Stream(f"req-{100 + i}") for i in range(6)]
            running += [asyncio.create_task(s.run(client, base)) for s in second]
            whole = [
                client.post(base + "/v1/chat/completions", json=chat_body(f"req-{200 + i}", False))
                for i in range(4)
            ]
            raw = [  # the plain completions API goes through the same pool
                client.post(
                    base + "/v1/completions",
                    json={"model": "m", "prompt": f"req-{400 + i}", "max_tokens": TOKENS},
                )
                for i in range(2)
            ]
            answers = list(await asyncio.wait_for(asyncio.gather(*whole), TIMEOUT))
            texts = await asyncio.wait_for(asyncio.gather(*raw), TIMEOUT)
            await asyncio.wait_for(asyncio.gather(*running), TIMEOUT)
            answers += await asyncio.wait_for(asyncio.gather(*begun), TIMEOUT)
        return first, second, list(answers), list(texts)

    first, second, answers, texts = asyncio.run(run())
    for i, text in enumerate(texts):
        assert text.status_code == 200, text.text
        assert text.json()["choices"][0]["text"].startswith(f"req-{400 + i} ")
    # Requests that had not started when the engine died: all served, each its own answer.
    for stream in second:
        assert stream.status == 200 and stream.completed, stream.events
        assert stream.text.startswith(stream.tag + " ")
    for i, answer in enumerate(answers):  # and so are whole replies, begun or not
        assert answer.status_code == 200, answer.text
        content = answer.json()["choices"][0]["message"]["content"]
        tag = f"req-{200 + i}" if i < 4 else f"req-{300 + i - 4}"
        assert content.startswith(tag + " ")
    # Streams on the killed engine end with the API's error event; the others complete.
    cut = [s for s in first if not s.completed]
    assert cut, "the killed engine served none of the first wave"
    for stream in cut:
        assert stream.status == 200 and stream.cut_with_error_event, stream.events
        assert stream.events[-1]["error"]["type"] == "api_error"
    assert len(cut) < len(first)  # the first wave was spread over both engines
