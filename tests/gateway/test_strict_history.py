"""``strict_history`` on the server: a model served with it renders history only as the
official template does (the official bytes or a 400); by default a reply the gateway
returned, text beside its calls, renders back as the model wrote it (docs/rendering.md)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import chatfmt  # noqa: E402
from _fake_server import gateway  # noqa: E402
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402
from chatfmt.commands.serve import _specs  # noqa: E402
from chatfmt.errors import ChatFmtError  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402
from chatfmt.gateway.config import load_config  # noqa: E402

LLAMA = chatfmt.get_template("llama3.1")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Quito"}'},
}
#: What the gateway returned for a Llama 3.1 reply with text before its call, sent back.
HISTORY = [
    {"role": "user", "content": "Weather in Quito?"},
    {"role": "assistant", "content": "Let me check that for you.", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_strict_model_refuses_what_the_official_template_would_drop() -> None:
    backend = OpenAICompletionsBackend(f"http://127.0.0.1:{_closed_port()}/v1", model="m")
    models = {
        "llama": ModelEntry("llama", backend, LLAMA),
        "strict": ModelEntry("strict", backend, LLAMA, strict_history=True),
    }
    body: dict[str, Any] = {"messages": HISTORY, "tools": TOOLS}
    with gateway(create_app(models)) as base:
        loose = httpx.post(base + "/v1/render", json={"model": "llama", **body}, timeout=30)
        strict = httpx.post(base + "/v1/render", json={"model": "strict", **body}, timeout=30)
        official = {**body, "messages": [HISTORY[0], {**HISTORY[1], "content": None}]}
        plain = httpx.post(base + "/v1/render", json={"model": "strict", **official}, timeout=30)
    assert loose.status_code == 200
    assert "Let me check that for you." in loose.json()["prompt"]
    assert strict.status_code == 400
    assert strict.json()["error"]["param"] == "messages[1].content"
    assert plain.status_code == 200  # what the official template writes is not refused


def test_the_config_sets_it_per_model_and_the_command_line_for_all(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(
        '[models.a]\ntemplate = "llama3.1"\nstrict_history = true\n'
        '[models.b]\ntemplate = "llama3.1"\n',
        encoding="utf-8",
    )
    specs, _limits = load_config(config)
    assert [s.strict_history for s in specs] == [True, False]
    both, _ = _specs(config, "embedded", *[None] * 6, strict_history=True)
    assert [s.strict_history for s in both] == [True, True]
    (one,), _ = _specs(None, "embedded", "llama3.1", *[None] * 5, strict_history=True)
    assert one.strict_history
    config.write_text('[models.a]\ntemplate = "llama3.1"\nstrict_history = "yes"\n')
    with pytest.raises(ChatFmtError, match=r"models\.a\.strict_history: must be true or false"):
        load_config(config)
