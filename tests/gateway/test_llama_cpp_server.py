"""``chatfmt serve --backend`` in front of llama-cpp-python's own server (``python -m
llama_cpp.server``), both started here on 127.0.0.1 and always stopped: the engine is
detected as llama-cpp-python and receives the constraint as ``grammar`` over HTTP, so the
replies of the embedded SmolLM2-135M are valid in every sample.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("fastapi")  # llama-cpp-python's server extra
pytest.importorskip("starlette_context")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
jsonschema = pytest.importorskip("jsonschema")

import chatfmt  # noqa: E402
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402

from _support import ROOT  # noqa: E402

pytestmark = pytest.mark.slow

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 16}},
            "required": ["city"],
        },
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
ANSWER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 16}, "sunny": {"type": "boolean"}},
    "required": ["city", "sunny"],
}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(command: list[str], log: Path, env: dict[str, str] | None = None) -> Any:
    """A server process whose output goes to ``log`` (a pipe would fill and stall it)."""
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_for(proc: Any, url: str, log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while True:
        assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer"
        time.sleep(0.2)


def stop(proc: Any) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from chatfmt.backends.llamacpp import default_model_path

    try:
        model = default_model_path()
    except chatfmt.ChatFmtError as exc:
        pytest.skip(str(exc))
    port = free_port()
    log = tmp_path_factory.mktemp("llama_cpp_server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    proc = start([*command, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"], log)
    try:
        wait_for(proc, f"http://127.0.0.1:{port}/v1/models", log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def served(engine: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    log = tmp_path_factory.mktemp("chatfmt_serve") / "serve.log"
    command = [sys.executable, "-m", "chatfmt.cli", "serve", "--backend", engine]
    command += ["--template", "qwen2.5", "--model-name", "smol", "--port", str(port)]
    proc = start(command, log, env)
    try:
        wait_for(proc, f"http://127.0.0.1:{port}/health", log)
        with openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=120
        ) as client:
            yield client
    finally:
        stop(proc)


def test_the_engine_is_detected_as_llama_cpp_python(engine: str) -> None:
    async def kind() -> str:
        async with OpenAICompletionsBackend(engine) as backend:
            return await backend.engine_kind()

    assert asyncio.run(kind()) == "llama-cpp-python"


def test_required_and_named_calls_are_valid_in_every_sample(served: Any) -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    for seed in (1, 2):
        for choice in ("required", named):
            reply = served.chat.completions.create(
                model="smol",
                messages=ASK,
                tools=[WEATHER],
                tool_choice=choice,
                max_tokens=60,
                seed=seed,
            )
            calls = reply.choices[0].message.tool_calls
            assert calls
            for call in calls:
                assert call.function.name == "get_weather"
                arguments = json.loads(call.function.arguments)
                jsonschema.validate(arguments, WEATHER["function"]["parameters"])


def test_json_schema_answers_are_valid_in_every_sample(served: Any) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER}}
    for seed in (1, 2, 3):
        reply = served.chat.completions.create(
            model="smol", messages=ASK, response_format=fmt, max_tokens=60, seed=seed
        )
        jsonschema.validate(json.loads(reply.choices[0].message.content), ANSWER)


def test_a_streamed_required_call_is_valid(served: Any) -> None:
    stream = served.chat.completions.create(
        model="smol",
        messages=ASK,
        tools=[WEATHER],
        tool_choice="required",
        max_tokens=60,
        seed=3,
        stream=True,
    )
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}
    for chunk in stream:
        for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            names[call.index] = names.get(call.index, "") + (call.function.name or "")
            arguments[call.index] = arguments.get(call.index, "") + (call.function.arguments or "")
    assert names and set(names.values()) == {"get_weather"}
    for text in arguments.values():
        jsonschema.validate(json.loads(text), WEATHER["function"]["parameters"])


def test_the_engines_tokenize_endpoint_counts_as_the_model_reads(engine: str, served: Any) -> None:
    """llama-cpp-python's ``/extras/tokenize`` behind ``Backend.tokenize`` and the gateway's
    ``/tokenize``: the ids llama.cpp reads the prompt as (the embedded backend's too)."""
    from chatfmt.backends.llamacpp import LlamaCppBackend

    prompt = chatfmt.render(ASK, "qwen2.5")

    async def engine_ids() -> tuple[list[int], str, list[int]]:
        async with OpenAICompletionsBackend(engine) as backend:
            ids = await backend.tokenize(prompt)
            # its detokenize leaves special tokens out: ordinary text reads back
            text = await backend.detokenize(await backend.tokenize("The weather in Paris"))
        return ids, text, await LlamaCppBackend().tokenize(prompt)

    ids, text, embedded = asyncio.run(engine_ids())
    assert ids == embedded and text.strip() == "The weather in Paris"
    root = str(served.base_url).removesuffix("/").removesuffix("/v1")
    answer = httpx.post(root + "/tokenize", json={"model": "smol", "messages": ASK}).json()
    assert answer["tokens"] == ids and answer["count"] == len(ids)
