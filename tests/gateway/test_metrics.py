"""``GET /metrics``: requests by endpoint and status, latency and time-to-first-token
histograms, tokens, backend failures and requests in flight, in Prometheus' text format —
in one process and across ``chatfmt serve --workers 2``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")
parser = pytest.importorskip("prometheus_client.parser")

import chatfmt  # noqa: E402
from _fake_server import FakeCompletionsServer, gateway, serve  # noqa: E402
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402

from _support import ROOT  # noqa: E402

QWEN = chatfmt.get_template("qwen2.5")
ASK = [{"role": "user", "content": "Hi"}]
CHAT = "/v1/chat/completions"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition: (name, sorted labels) → value."""
    out = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def engine() -> Iterator[FakeCompletionsServer]:
    with serve(FakeCompletionsServer()) as running:
        yield running


def test_requests_latency_tokens_and_failures_are_counted(engine: FakeCompletionsServer) -> None:
    engine.replies = ["Hello there.", "Fine, thanks."]
    engine.requests.clear()
    entry = ModelEntry("qwen", OpenAICompletionsBackend(engine.base_url, model="m"), QWEN)
    with gateway(create_app({"qwen": entry})) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0)
        streamed = "".join(
            c.choices[0].delta.content or ""
            for c in client.chat.completions.create(model="qwen", messages=ASK, stream=True)
            if c.choices
        )
        whole = client.chat.completions.create(model="qwen", messages=ASK)
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="nope", messages=ASK)
        engine.mode = "http500"
        try:
            with pytest.raises(openai.APIStatusError) as failed:
                client.chat.completions.create(model="qwen", messages=ASK)
        finally:
            engine.mode = "ok"
        page = httpx.get(base + "/metrics")
    assert streamed == "Hello there." and whole.choices[0].message.content == "Fine, thanks."
    assert failed.value.status_code == 502
    assert page.headers["content-type"].startswith("text/plain")
    found = samples(page.text)
    total = "chatfmt_requests_total"
    assert value(found, total, endpoint=CHAT, status="200") == 2
    assert value(found, total, endpoint=CHAT, status="404") == 1
    assert value(found, total, endpoint=CHAT, status="502") == 1
    assert value(found, "chatfmt_request_duration_seconds_count", endpoint=CHAT) == 4
    # the first token came for the two answered requests only
    ttft = "chatfmt_time_to_first_token_seconds_count"
    assert value(found, ttft, endpoint=CHAT, model="qwen") == 2
    # the engine's own usage (the fake counts characters): the two answered requests
    answered = engine.requests[:2]
    prompt = sum(len(r["prompt"]) for r in answered)
    assert value(found, "chatfmt_tokens_total", model="qwen", kind="prompt") == prompt
    completion = len("Hello there.") + len("Fine, thanks.")
    assert value(found, "chatfmt_tokens_total", model="qwen", kind="completion") == completion
    assert value(found, "chatfmt_backend_errors_total", model="qwen") == 1
    assert value(found, "chatfmt_requests_in_flight", endpoint=CHAT) == 0


def test_a_stream_cut_by_the_engine_is_a_backend_error(engine: FakeCompletionsServer) -> None:
    engine.replies = ["a reply long enough to be cut halfway"]
    entry = ModelEntry("qwen", OpenAICompletionsBackend(engine.base_url, model="m"), QWEN)
    engine.mode = "die"
    try:
        with gateway(create_app({"qwen": entry})) as base:
            body = {"model": "qwen", "messages": ASK, "stream": True}
            events = httpx.post(base + CHAT, json=body).text
            found = samples(httpx.get(base + "/metrics").text)
    finally:
        engine.mode = "ok"
    assert '"error"' in events  # the stream ended with an error event
    assert value(found, "chatfmt_requests_total", endpoint=CHAT, status="200") == 1
    assert value(found, "chatfmt_backend_errors_total", model="qwen") == 1
    assert (
        value(found, "chatfmt_time_to_first_token_seconds_count", endpoint=CHAT, model="qwen") == 1
    )


def test_unknown_paths_share_one_label(engine: FakeCompletionsServer) -> None:
    entry = ModelEntry("qwen", OpenAICompletionsBackend(engine.base_url, model="m"), QWEN)
    with gateway(create_app({"qwen": entry})) as base:
        for path in ("/nothing", "/nothing/else", "/v1/models", "/v1/responses/resp_none"):
            httpx.get(base + path)
        found = samples(httpx.get(base + "/metrics").text)
    assert value(found, "chatfmt_requests_total", endpoint="other", status="404") == 2
    assert value(found, "chatfmt_requests_total", endpoint="/v1/models", status="200") == 1
    # a route with a parameter is named by its path pattern
    stored = "/v1/responses/{response_id}"
    assert value(found, "chatfmt_requests_total", endpoint=stored, status="404") == 1


@pytest.mark.slow
def test_workers_share_their_figures(engine: FakeCompletionsServer, tmp_path: Any) -> None:
    """``--workers 2``: whichever worker answers ``/metrics`` reports every worker's requests."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    command = [sys.executable, "-m", "chatfmt.cli", "serve", "--backend", engine.base_url]
    command += ["--template", "qwen2.5", "--model-name", "qwen", "--backend-model", "m"]
    command += ["--port", str(port), "--workers", "2", "--log-level", "warning"]
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(base + "/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "chatfmt serve did not start"
            time.sleep(0.2)
        sent = 6
        engine.replies = ["ok"] * sent
        for _ in range(sent):  # new connections: spread over the workers
            answer = httpx.post(base + CHAT, json={"model": "qwen", "messages": ASK})
            assert answer.status_code == 200
        for _ in range(4):  # any worker answers the same sums
            found = samples(httpx.get(base + "/metrics").text)
            assert value(found, "chatfmt_requests_total", endpoint=CHAT, status="200") == sent
            assert value(found, "chatfmt_requests_in_flight", endpoint=CHAT) == 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
