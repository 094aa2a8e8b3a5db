"""Guaranteed structure through the gateway: ``response_format``, the constraint sent to the
backend, and the check of every reply (an invalid one is a ``model_error``, never a reply).

Scripted replies check the gateway's rules; the embedded SmolLM2-135M (slow tier) checks
that what a real model writes under the constraint is valid in every sample, whole and
streamed, and that the official SDKs' structured-output helpers work unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("starlette")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
jsonschema = pytest.importorskip("jsonschema")

import chatfmt  # noqa: E402
from _fake_server import gateway  # noqa: E402
from chatfmt.backends import ScriptedBackend, ScriptedReply  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402

QWEN = chatfmt.get_template("qwen2.5")
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
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The time in a timezone.",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "PST"]}},
            "required": ["zone"],
        },
    },
}
TOOLS = [WEATHER, TIME]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 16},
        "sunny": {"type": "boolean"},
    },
    "required": ["city", "sunny"],
    "additionalProperties": False,
}
CITY_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "city_weather", "schema": CITY, "strict": True},
}


def schema_of(name: str) -> dict[str, Any]:
    return next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)


def assert_valid_calls(calls: list[dict[str, Any]], allowed: set[str]) -> None:
    """Every call names an offered (allowed) tool, with arguments valid against its schema."""
    assert calls
    for call in calls:
        name = call["function"]["name"]
        assert name in allowed, name
        jsonschema.validate(json.loads(call["function"]["arguments"]), schema_of(name))


# ---------------------------------------------------------------------- scripted replies
@contextmanager
def scripted(*replies: str | ScriptedReply) -> Iterator[tuple[ScriptedBackend, str]]:
    """A gateway over a backend replaying ``replies``; the backend and the gateway's URL."""
    backend = ScriptedBackend(replies)
    with gateway(create_app({"m": ModelEntry("m", backend, QWEN)})) as base:
        yield backend, base


def post(base: str, **body: Any) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", json={"model": "m", **body}, timeout=30)


def stream_events(base: str, **body: Any) -> list[dict[str, Any]]:
    body = {"model": "m", "stream": True, **body}
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=30) as resp:
        assert resp.status_code == 200
        lines = [line[6:] for line in resp.iter_lines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def test_the_backend_gets_the_constraint_and_the_prefill() -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    with scripted('{"city": "Paris"}}\n</tool_call>') as (backend, base):
        reply = post(base, messages=ASK, tools=TOOLS, tool_choice=named).json()
    request = backend.requests[0]
    assert request.constraint is not None and request.constraint.gbnf
    assert request.prompt.endswith(request.constraint.prefill)
    assert request.constraint.prefill.rstrip().endswith('"get_weather", "arguments":')
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}


def test_response_format_json_schema_is_accepted_and_constrained() -> None:
    with scripted('{"city": "Oslo", "sunny": false}') as (backend, base):
        reply = post(base, messages=ASK, response_format=CITY_FORMAT).json()
    assert json.loads(reply["choices"][0]["message"]["content"]) == {"city": "Oslo", "sunny": False}
    constraint = backend.requests[0].constraint
    assert constraint is not None and constraint.json_schema == CITY


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("body", "reply", "problem"),
    [
        (
            {"tools": TOOLS, "tool_choice": "required"},
            '<tool_call>\n{"name": "Bienvenue", "arguments": {}}\n</tool_call>',
            "tool_calls[0].function.name: 'Bienvenue' is not an offered tool",
        ),
        (
            {"tools": TOOLS},
            '<tool_call>\n{"name": "get_time", "arguments": {"zone": "Mars"}}\n</tool_call>',
            "tool_calls[0].function.arguments.zone:",
        ),
        ({"response_format": CITY_FORMAT}, "It is sunny in Paris.", "content: not valid JSON"),
        ({"response_format": {"type": "json_object"}}, "[1, 2]", "content:"),
    ],
)
def test_an_invalid_reply_is_a_model_error_naming_what_the_model_wrote(
    body: dict[str, Any], reply: str, problem: str, stream: bool
) -> None:
    """The scripted backend ignores the constraint, as an engine without one would."""
    prefill = '<tool_call>\n{"name": "' if body.get("tool_choice") == "required" else ""
    with scripted(reply.removeprefix(prefill)) as (_backend, base):
        if stream:
            events = stream_events(base, messages=ASK, **body)
            error = events[-1]["error"]  # instead of the finish: the SDKs raise it
            finishes = [e["choices"][0]["finish_reason"] for e in events[:-1] if e["choices"]]
            assert not any(finishes)
        else:
            resp = post(base, messages=ASK, **body)
            assert resp.status_code == 500
            error = resp.json()["error"]
    assert error["type"] == "model_error" and error["code"] == "invalid_model_output"
    assert problem in error["message"]
    assert repr(reply)[:40] in error["message"]  # what the model wrote, quoted


def test_a_reply_cut_by_max_tokens_is_returned_as_it_is() -> None:
    with scripted(ScriptedReply('{"city": "Os', "length")) as (_backend, base):
        reply = post(base, messages=ASK, response_format=CITY_FORMAT, max_tokens=5).json()
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["choices"][0]["message"]["content"] == '{"city": "Os'


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": {"type": "objekt"}},
                }
            },
            "response_format.json_schema.schema",
        ),
        (
            {
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": "f", "parameters": {"type": "object", "required": 3}},
                    }
                ]
            },
            "tools[0].function.parameters",
        ),
        ({"response_format": {"type": "xml"}}, "response_format"),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema"),
    ],
)
def test_a_malformed_schema_is_a_400_naming_it(body: dict[str, Any], param: str) -> None:
    with scripted() as (_backend, base):
        resp = post(base, messages=ASK, **body)
    assert resp.status_code == 400
    assert resp.json()["error"]["param"].startswith(param), resp.json()


# ---------------------------------------------------------------------- the embedded model
SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def smol() -> Iterator[Any]:
    """The gateway over the embedded SmolLM2-135M, rendered with Qwen2.5's format (ChatML
    markup like SmolLM2's own, Hermes calls)."""
    pytest.importorskip("llama_cpp")
    from chatfmt.backends.llamacpp import LlamaCppBackend

    try:
        backend = LlamaCppBackend()
    except chatfmt.ChatFmtError as exc:
        pytest.skip(str(exc))
    with (
        gateway(create_app({"smol": ModelEntry("smol", backend, QWEN)})) as base,
        openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=120) as c,
    ):
        yield c


def run_chat(client: Any, stream: bool, **body: Any) -> dict[str, Any]:
    """The assistant message (streamed deltas merged), as a plain dict."""
    body = {"model": "smol", "messages": ASK, "max_tokens": 80, **body}
    if not stream:
        return client.chat.completions.create(**body).choices[0].message.model_dump()
    content, calls = "", {}
    for chunk in client.chat.completions.create(stream=True, **body):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            entry = calls.setdefault(tc.index, {"function": {"name": "", "arguments": ""}})
            entry["function"]["name"] += (tc.function.name or "") if tc.function else ""
            entry["function"]["arguments"] += (tc.function.arguments or "") if tc.function else ""
    return {"content": content, "tool_calls": [calls[i] for i in sorted(calls)]}


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True])
def test_required_and_named_choices_return_offered_tools_with_valid_arguments(
    smol: Any, stream: bool
) -> None:
    named = {"type": "function", "function": {"name": "get_time"}}
    one = {"tools": TOOLS, "parallel_tool_calls": False}  # the reply ends after its call
    for seed in SEEDS:
        message = run_chat(smol, stream, tool_choice="required", seed=seed, **one)
        assert_valid_calls(message["tool_calls"], {"get_weather", "get_time"})
        message = run_chat(smol, stream, tool_choice=named, seed=seed, **one)
        assert_valid_calls(message["tool_calls"], {"get_time"})


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True])
def test_response_formats_return_valid_json_in_every_sample(smol: Any, stream: bool) -> None:
    for seed in SEEDS:
        message = run_chat(smol, stream, response_format=CITY_FORMAT, seed=seed)
        jsonschema.validate(json.loads(message["content"]), CITY)
        message = run_chat(smol, stream, response_format={"type": "json_object"}, seed=seed)
        assert isinstance(json.loads(message["content"]), dict)


@pytest.mark.slow
def test_auto_returns_text_or_offered_calls_never_an_unknown_tool(smol: Any) -> None:
    for seed in SEEDS:
        message = run_chat(smol, False, tools=TOOLS, seed=seed, temperature=1.0, max_tokens=40)
        if message["tool_calls"]:
            assert_valid_calls(message["tool_calls"], {"get_weather", "get_time"})
        else:
            assert isinstance(message["content"], str)


def test_a_code_interpreter_offered_with_functions_is_left_unconstrained() -> None:
    """A code interpreter is no function: nothing is constrained, and its calls pass."""
    code = "<|action_start|><|interpreter|>\n```python\nprint(1)\n```<|action_end|>\n"
    backend = ScriptedBackend([code])
    entry = ModelEntry("m", backend, chatfmt.get_template("internlm2"))
    with gateway(create_app({"m": entry})) as base:
        tools = [WEATHER, {"type": "code_interpreter"}]
        resp = httpx.post(
            base + "/v1/chat/completions",
            json={"model": "m", "messages": ASK, "tools": tools},
            timeout=30,
        )
    assert resp.status_code == 200, resp.text
    assert backend.requests[0].constraint is None
    assert resp.json()["choices"][0]["message"]["tool_calls"][0]["type"] == "code_interpreter"


def test_render_shows_the_constraint() -> None:
    with scripted() as (_backend, base):
        body = {"model": "m", "messages": ASK, "tools": TOOLS}
        auto = httpx.post(base + "/v1/render", json=body, timeout=30).json()
        plain = httpx.post(base + "/v1/render", json={**body, "tools": None}, timeout=30).json()
    assert auto["constraint"]["trigger"] == "<tool_call>"
    assert auto["constraint"]["gbnf"].startswith("root ::=")
    assert "constraint" not in plain
