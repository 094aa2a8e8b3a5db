"""``chatfmt serve`` pairs a template without a tool format (SmolLM2 → hermes, ``--tool-format``,
``tool_format`` in a config): tools are offered, calls are forced and parsed; a template without
any format answers tools with a 400 that says how to choose one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

import chatfmt
from chatfmt.backends import ScriptedBackend
from chatfmt.gateway import ModelEntry, create_app
from chatfmt.gateway.config import ModelSpec, build_model, load_config

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ASK = [{"role": "user", "content": "Weather in Paris?"}]


def _template_of(spec: ModelSpec) -> chatfmt.Template:
    async def build() -> chatfmt.Template:
        entry = await build_model(spec)
        await entry.backend.aclose()
        return entry.template

    return asyncio.run(build())


def test_specs_pair_the_template(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"  # never contacted: the template is given
    assert _template_of(ModelSpec("s", url, template="smollm2")).name == "smollm2+hermes"
    plain = ModelSpec("s", url, template="smollm2", tool_format="none")
    assert _template_of(plain).name == "smollm2"
    chatml = ModelSpec("c", url, template="chatml", tool_format="hermes")
    assert _template_of(chatml).name == "chatml+hermes"
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[models.c]\nbackend = "{url}"\ntemplate = "chatml"\ntool_format = "hermes"\n'
    )
    (spec,), _limits = load_config(config)
    assert spec.tool_format == "hermes" and _template_of(spec).name == "chatml+hermes"


def _post(app: Any, body: dict[str, Any]) -> Any:
    with TestClient(app) as http:
        return http.post("/v1/chat/completions", json=body)


def test_a_paired_template_is_served_with_tools() -> None:
    smol = chatfmt.with_tool_format("smollm2", "hermes")
    engine = ScriptedBackend(['get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'])
    app = create_app({"smol": ModelEntry("smol", engine, smol)})
    body = {"model": "smol", "messages": ASK, "tools": [WEATHER], "tool_choice": "required"}
    res = _post(app, body)
    assert res.status_code == 200, res.text
    (call,) = res.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    prompt = engine.prompts[0]
    assert "<tools>\n" in prompt and prompt.endswith(
        '<|im_start|>assistant\n<tool_call>\n{"name": "'
    )


def test_no_tool_format_is_a_400_that_says_how_to_choose_one() -> None:
    app = create_app({"c": ModelEntry("c", ScriptedBackend([]), chatfmt.get_template("chatml"))})
    res = _post(app, {"model": "c", "messages": ASK, "tools": [WEATHER]})
    assert res.status_code == 400
    error = res.json()["error"]
    assert error["param"] == "tools" and "--tool-format" in error["message"]
    assert "hermes" in error["message"]
