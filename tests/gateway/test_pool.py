"""The engine pool's policy, with scripted engines: least in flight, prefix affinity, retry
before the first chunk, taking a failing engine out and probing it back in, all down."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatfmt.backends import Backend, CompletionChunk, CompletionRequest
from chatfmt.backends.pool import PoolBackend, PoolPolicy
from chatfmt.errors import (
    BackendConnectionError,
    BackendHTTPError,
    BackendProtocolError,
    BackendUnavailableError,
)


class Engine(Backend):
    """A scripted engine: answers ``reply`` in pieces; ``down`` refuses before the first chunk,
    ``cut`` breaks off after it (once); ``gate`` (when set) holds every stream before its end."""

    def __init__(self, name: str, reply: str = "hello world") -> None:
        self.name = name
        self.reply = reply
        self.down = False
        self.cut = False
        self.status: int | None = None  # an HTTP error status to answer
        self.gate: asyncio.Event | None = None
        self.served: list[str] = []
        self.pings = 0
        self.counts = False  # sends the prompt's count with its first chunk when asked
        self.asked_counts = 0

    async def counts_prompt_in_stream(self) -> bool:
        self.asked_counts += 1
        return self.counts

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        if self.down:
            raise BackendConnectionError(f"cannot reach {self.name}")
        if self.status is not None:
            raise BackendHTTPError(f"{self.name}: HTTP {self.status}", status=self.status)
        self.served.append(request.prompt)
        yield CompletionChunk(self.reply[:5])
        if self.cut:
            self.cut = False
            raise BackendProtocolError(f"{self.name}: the answer broke off")
        if self.gate is not None:
            await self.gate.wait()
        yield CompletionChunk(self.reply[5:], "stop")

    async def ping(self) -> None:
        self.pings += 1
        if self.down:
            raise BackendConnectionError(f"cannot reach {self.name}")


def text(pool: Backend, prompt: str = "p") -> str:
    return asyncio.run(pool.complete(CompletionRequest(prompt))).text


async def drain(pool: Backend, prompt: str) -> str:
    return "".join([c.text async for c in pool.stream(CompletionRequest(prompt))])


def test_requests_go_to_the_engine_with_the_fewest_in_flight() -> None:
    a, b, c = Engine("a"), Engine("b"), Engine("c")
    pool = PoolBackend([a, b, c], names=["a", "b", "c"])

    async def run() -> None:
        gate = asyncio.Event()
        a.gate = b.gate = c.gate = gate
        held = [asyncio.create_task(drain(pool, f"held {i}")) for i in range(4)]
        while sum(m.in_flight for m in pool.members) < 4:
            await asyncio.sleep(0)
        counts = sorted(m.in_flight for m in pool.members)
        assert counts == [1, 1, 2]  # spread: no engine gets a second before each has one
        busiest = max(pool.members, key=lambda m: m.in_flight)
        assert pool.choose(CompletionRequest("new")) is not busiest
        gate.set()
        assert all(r == "hello world" for r in await asyncio.gather(*held))
        assert all(m.in_flight == 0 for m in pool.members)

    asyncio.run(run())


def test_a_follow_up_turn_goes_where_its_prefix_was_served() -> None:
    a, b = Engine("a"), Engine("b")
    pool = PoolBackend([a, b], names=["a", "b"], policy=PoolPolicy(block_chars=8))
    first = "<|system|>be brief<|user|>hi there, how are you?<|assistant|>"
    text(pool, first)
    owner = a if a.served else b
    for turn in range(4):  # each follow-up starts with the previous prompt and reply
        first = f"{first}hello world<|user|>and now {turn}?<|assistant|>"
        if turn % 2:
            text(pool, first)  # whole
        else:
            assert asyncio.run(drain(pool, first)) == "hello world"  # streamed
        assert owner.served[-1] == first
    other = b if owner is a else a
    text(pool, "a different conversation entirely")  # least in flight, ties take turns
    text(pool, "another different conversation")
    assert other.served  # affinity does not pin unrelated prompts


def test_affinity_yields_to_load_beyond_the_slack() -> None:
    a, b = Engine("a"), Engine("b")
    pool = PoolBackend([a, b], names=["a", "b"], policy=PoolPolicy(block_chars=4, affinity_slack=1))
    prompt = "a shared long prefix"
    text(pool, prompt)
    owner = pool.members[0] if a.served else pool.members[1]
    owner.in_flight = 1  # as busy as the slack allows: still preferred
    assert pool.choose(CompletionRequest(prompt + " more")) is owner
    owner.in_flight = 2
    assert pool.choose(CompletionRequest(prompt + " more")) is not owner


@pytest.mark.parametrize("failure", ["down", "http500", "http429"])
def test_an_engine_failing_before_its_first_chunk_is_retried_on_another(failure: str) -> None:
    a, b = Engine("a"), Engine("b")
    if failure == "down":
        a.down = True
    else:
        a.status = int(failure[4:])
    pool = PoolBackend([a, b], names=["a", "b"])

    async def run() -> list[str]:
        return [await drain(pool, f"q{i}") for i in range(4)]

    assert asyncio.run(run()) == ["hello world"] * 4
    assert text(pool) == "hello world"
    assert len(b.served) == 5 and not a.served


def test_a_client_error_is_not_retried() -> None:
    a, b = Engine("a"), Engine("b")
    a.status = b.status = 400
    pool = PoolBackend([a, b], names=["a", "b"])
    with pytest.raises(BackendHTTPError):
        text(pool)
    assert all(m.healthy and m.failures == 0 for m in pool.members)


def test_a_stream_cut_after_its_first_chunk_fails_for_the_caller() -> None:
    a = Engine("a")
    a.cut = True
    pool = PoolBackend([a, Engine("b")], names=["a", "b"])

    async def run() -> None:
        chunks = pool.stream(CompletionRequest("p"))
        with pytest.raises(BackendProtocolError):
            async for _ in chunks:
                pass

    pool.members[1].healthy = False  # so that the cut engine is the one chosen
    asyncio.run(run())
    assert pool.members[0].failures == 1


def test_a_failing_engine_is_taken_out_and_probed_back_in() -> None:
    a, b = Engine("a"), Engine("b")
    a.down = True
    policy = PoolPolicy(max_failures=2, probe_delay=0.01, probe_max_delay=0.02)
    pool = PoolBackend([a, b], names=["a", "b"], policy=policy)

    async def run() -> None:
        for i in range(6):
            assert await drain(pool, f"q{i}") == "hello world"
        member = pool.members[0]
        assert not member.healthy and "cannot reach a" in member.last_error
        while a.pings < 3:  # probed again and again while it stays down (bounded backoff)
            await asyncio.sleep(0.01)
        assert not member.healthy
        a.down = False
        while not member.healthy:
            await asyncio.sleep(0.01)
        b.down = True  # now only a answers
        assert await drain(pool, "back") == "hello world"
        assert a.served[-1] == "back"
        await pool.aclose()

    asyncio.run(run())


def test_the_pool_counts_in_stream_only_where_every_healthy_engine_does() -> None:
    # /v1/messages takes the prompt's count from the first chunk only where whichever
    # engine answers will send it; an engine taken out is not asked (nor probed)
    a, b = Engine("a"), Engine("b")
    pool = PoolBackend([a, b], names=["a", "b"])
    a.counts = True
    assert asyncio.run(pool.counts_prompt_in_stream()) is False
    b.counts = True
    assert asyncio.run(pool.counts_prompt_in_stream()) is True
    b.counts = False
    pool.members[1].healthy = False
    asked = b.asked_counts
    assert asyncio.run(pool.counts_prompt_in_stream()) is True
    assert b.asked_counts == asked
    pool.members[0].healthy = False
    assert asyncio.run(pool.counts_prompt_in_stream()) is False  # none to answer


def test_all_engines_down_is_a_clear_unavailable_error() -> None:
    a, b = Engine("a"), Engine("b")
    a.down = b.down = True
    pool = PoolBackend([a, b], names=["a", "b"], policy=PoolPolicy(max_failures=1))

    async def run() -> None:
        with pytest.raises(BackendUnavailableError) as first:
            await drain(pool, "p")
        assert "a (" in str(first.value) and "cannot reach b" in str(first.value)
        with pytest.raises(BackendUnavailableError, match="taken out"):
            await pool.complete(CompletionRequest("p"))
        await pool.aclose()

    asyncio.run(run())


def test_the_pool_is_a_gateway_backend_with_all_down_a_503() -> None:
    from starlette.testclient import TestClient

    from chatfmt import get_template
    from chatfmt.gateway import ModelEntry, create_app

    a, b = Engine("a", "Paris, France."), Engine("b", "Paris, France.")
    a.down = b.down = True
    pool = PoolBackend([a, b], names=["a", "b"])
    app = create_app({"m": ModelEntry("m", pool, get_template("qwen2.5"))})
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with TestClient(app) as client:
        resp = client.post("/v1/chat/completions", json=body)
        assert resp.status_code == 503, resp.text
        assert resp.json()["error"]["code"] == "backend_unavailable"
        b.down = False
        for stream in (False, True):
            resp = client.post("/v1/chat/completions", json={**body, "stream": stream})
            assert resp.status_code == 200 and "Paris" in resp.text


def test_a_whole_reply_broken_off_midway_is_generated_again() -> None:
    """Nothing of a whole (not streamed) reply has been answered: a reply cut midway is
    generated again from the start (chat completions, n = 1 and n = 2)."""
    from starlette.testclient import TestClient

    from chatfmt import get_template
    from chatfmt.gateway import ModelEntry, create_app

    engine = Engine("a", "Paris, France.")
    app = create_app({"m": ModelEntry("m", engine, get_template("qwen2.5"))})
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with TestClient(app) as client:
        for n in (1, 2):
            engine.cut = True
            resp = client.post("/v1/chat/completions", json={**body, "n": n})
            assert resp.status_code == 200, resp.text
            contents = [c["message"]["content"] for c in resp.json()["choices"]]
            assert contents == ["Paris, France."] * n


def test_a_config_naming_several_backends_builds_a_pool(tmp_path: Any) -> None:
    import dataclasses
    import json

    from chatfmt.errors import ChatFmtError
    from chatfmt.gateway.config import ModelSpec, build_model, load_config

    urls = ["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"]  # never contacted
    config = tmp_path / "gateway.toml"
    config.write_text(f'[models.q]\nbackend = {json.dumps(urls)}\ntemplate = "qwen2.5"\n')
    (spec,), _limits = load_config(config)
    assert spec.backend_urls == tuple(urls)
    # as a --workers process gets it: through JSON
    again = ModelSpec(**json.loads(json.dumps(dataclasses.asdict(spec))))
    assert again == spec

    async def build() -> Backend:
        entry = await build_model(spec)
        await entry.backend.aclose()
        return entry.backend

    pool = asyncio.run(build())
    assert isinstance(pool, PoolBackend)
    assert [m.name for m in pool.members] == urls
    assert ModelSpec("one", [urls[0]]).backend == urls[0]  # type: ignore[arg-type]
    for bad, why in ((["embedded", urls[0]], "not embedded"), ([], "non-empty list")):
        config.write_text(f"[models.q]\nbackend = {json.dumps(bad)}\n")
        with pytest.raises(ChatFmtError, match=why):
            load_config(config)


def test_serve_takes_backend_more_than_once() -> None:
    from chatfmt.commands.serve import _specs

    urls = ("http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1")
    specs, _limits = _specs(None, urls, "qwen2.5", None, None, None, None, None)
    assert specs[0].backend_urls == urls


@pytest.mark.slow
def test_chatfmt_chat_takes_several_backends() -> None:
    """``chatfmt chat --backend A --backend B``: the agent over a pool; a dead engine is
    skipped before its first chunk."""
    import json
    import socket

    from typer.testing import CliRunner

    from _fake_server import FakeCompletionsServer, serve
    from chatfmt.cli import app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # nothing listens there
    with serve(FakeCompletionsServer(["Hello!<|im_end|>"] * 2)) as alive:
        for order in ([dead, alive.base_url], [alive.base_url, dead]):
            args = ["chat", "--backend", order[0], "--backend", order[1], "-t", "qwen2.5"]
            res = CliRunner().invoke(app, [*args, "-m", "hi", "--json"])
            assert res.exit_code == 0, res.output
            assert json.loads(res.output)["answer"] == "Hello!"
    assert len(alive.requests) == 2
