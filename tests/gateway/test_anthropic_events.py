"""``/v1/messages`` stream events, exactly: a scripted engine (``ScriptedBackend``) behind the
gateway in-process; and one cheap check of a real model (the embedded SmolLM2) through the
``anthropic`` SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import groupby
from typing import Any

import pytest

pytest.importorskip("starlette")
anthropic = pytest.importorskip("anthropic")

from starlette.testclient import TestClient  # noqa: E402

import chatfmt  # noqa: E402
from _anthropic_cases import ASK, QWEN3, TOKENIZER, WEATHER, WEATHER_FUNCTION  # noqa: E402
from chatfmt.backends import ScriptedBackend  # noqa: E402
from chatfmt.backends.scripted import ScriptedReply  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402
from chatfmt.gateway.signature import ThinkingSigner  # noqa: E402
from chatfmt.tool_format import resolve_tool_format  # noqa: E402

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def stream_events(replies: list[str], body: dict[str, Any], chunk: int = 5) -> list[Any]:
    """The ``(event, data)`` pairs of one streamed ``/v1/messages`` request to a qwen3 model
    whose engine writes ``replies`` (``chunk`` characters at a time)."""
    engine = ScriptedBackend([ScriptedReply(r, chunk_size=chunk) for r in replies])
    entry = ModelEntry("qwen3", engine, QWEN3, tokenizer=TOKENIZER)
    app = create_app({"qwen3": entry}, thinking_secret="k")
    body = {"model": "qwen3", "max_tokens": 256, "messages": ASK, "stream": True, **body}
    with TestClient(app) as http, http.stream("POST", "/v1/messages", json=body) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        return list(pairs(reply.iter_lines()))


def pairs(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: ") :])
            assert data["type"] == name  # every event names itself twice, as Anthropic's do
            yield name, data


def shape(events: list[Any]) -> list[tuple[Any, ...]]:
    """Each event as (name, block index, block or delta type), runs of one delta type as one."""
    out = []
    for name, data in events:
        kind = (data.get("content_block") or data.get("delta") or {}).get("type")
        out.append((name, data.get("index"), kind))
    return [key for key, _ in groupby(out)]


def test_thinking_text_and_a_call_stream_as_three_blocks() -> None:
    written = "<think>\nThe user wants the weather.\n</think>\n\nChecking.\n" + CALL + "<|im_end|>"
    events = stream_events([written], {"tools": [WEATHER]})
    assert shape(events) == [
        ("message_start", None, None),
        ("ping", None, None),
        ("content_block_start", 0, "thinking"),
        ("content_block_delta", 0, "thinking_delta"),
        ("content_block_delta", 0, "signature_delta"),
        ("content_block_stop", 0, None),
        ("content_block_start", 1, "text"),
        ("content_block_delta", 1, "text_delta"),
        ("content_block_stop", 1, None),
        ("content_block_start", 2, "tool_use"),
        ("content_block_delta", 2, "input_json_delta"),
        ("content_block_stop", 2, None),
        ("message_delta", None, None),
        ("message_stop", None, None),
    ]
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    thinking = "".join(d.get("thinking", "") for d in deltas)
    assert thinking == "The user wants the weather."
    assert [d["signature"] for d in deltas if "signature" in d] == [
        ThinkingSigner("k").sign(thinking)
    ]
    assert "".join(d.get("text", "") for d in deltas).strip() == "Checking."
    arguments = [d["partial_json"] for d in deltas if "partial_json" in d]
    assert len(arguments) > 1 and json.loads("".join(arguments)) == {"city": "Paris"}  # as written
    call = next(
        d["content_block"] for n, d in events if n == "content_block_start" and d["index"] == 2
    )
    assert call["name"] == "get_weather" and call["input"] == {} and call["id"]
    end = events[-2][1]
    assert end["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert end["usage"]["output_tokens"] == len(written) - len("<|im_end|>")  # scripted: chars
    prompt = chatfmt.render(ASK, QWEN3, tools=[WEATHER_FUNCTION])
    assert events[0][1]["message"]["usage"]["input_tokens"] == len(TOKENIZER.encode(prompt))


def test_disable_parallel_tool_use_streams_one_call() -> None:
    second = CALL.replace("Paris", "Rome")
    choice = {"type": "any", "disable_parallel_tool_use": True}
    # qwen3's "any" is a constraint with no prefill (thinking may come first): the whole call
    events = stream_events([CALL + "\n" + second], {"tools": [WEATHER], "tool_choice": choice})
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [(b["type"], b["name"]) for b in starts] == [("tool_use", "get_weather")]
    arguments = "".join(
        d["delta"].get("partial_json", "") for n, d in events if n == "content_block_delta"
    )
    assert json.loads(arguments) == {"city": "Paris"}


def test_streaming_without_a_token_count_is_refused_before_generation() -> None:
    engine = ScriptedBackend(["Hi."])  # no tokenizer known, and no tokenize endpoint
    app = create_app({"qwen3": ModelEntry("qwen3", engine, QWEN3)})
    body = {"model": "qwen3", "max_tokens": 8, "messages": ASK, "stream": True}
    with TestClient(app) as http:
        reply = http.post("/v1/messages", json=body)
        counted = http.post("/v1/messages/count_tokens", json=body)
        plain = http.post("/v1/messages", json={**body, "stream": False})
    for refused in (reply, counted):
        assert refused.status_code == 400
        assert "--tokenizer" in refused.json()["error"]["message"]
    assert reply.json()["type"] == "error" and len(engine.requests) == 1  # the plain one
    assert plain.status_code == 200  # the engine's count, after generation
    assert plain.json()["usage"]["input_tokens"] == len(engine.prompts[0])


def test_an_invalid_reply_ends_the_stream_with_an_error_event() -> None:
    events = stream_events(
        ['<tool_call>\n{"name": "get_weather", "arguments": {"town": "Paris"}}\n</tool_call>'],
        {"tools": [WEATHER]},
    )
    name, data = events[-1]
    assert name == "error" and data["error"]["type"] == "api_error"
    assert "city" in data["error"]["message"]
    assert "message_stop" not in [n for n, _ in events]


@pytest.mark.slow
def test_embedded_model_answers_tool_choice_any_with_a_valid_call() -> None:
    pytest.importorskip("llama_cpp")
    jsonschema = pytest.importorskip("jsonschema")
    from chatfmt.backends.llamacpp import LlamaCppBackend

    try:
        backend = LlamaCppBackend()
    except chatfmt.ChatFmtError as exc:
        pytest.skip(str(exc))
    template = resolve_tool_format(chatfmt.get_template(backend.model_path), None)  # + hermes
    entry = ModelEntry("smol", backend, template)
    with TestClient(create_app({"smol": entry})) as http:
        client = anthropic.Anthropic(
            base_url="http://testserver", api_key="x", http_client=http, max_retries=0
        )
        reply = client.messages.create(
            model="smol",
            max_tokens=100,
            messages=ASK,
            tools=[WEATHER],
            tool_choice={"type": "any", "disable_parallel_tool_use": True},
        )
        counted = client.messages.count_tokens(model="smol", messages=ASK)
    assert reply.stop_reason == "tool_use"
    calls = [b for b in reply.content if b.type == "tool_use"]
    assert calls and all(c.name == "get_weather" for c in calls)
    for call in calls:
        jsonschema.validate(call.input, WEATHER["input_schema"])
    assert counted.input_tokens > 0 and reply.usage.input_tokens > counted.input_tokens


def test_text_deltas_are_written_as_every_other_event() -> None:
    from chatfmt.gateway.anthropic_wire import sse

    engine = ScriptedBackend([ScriptedReply('Sunny, "24 °C" — and dry.<|im_end|>', chunk_size=3)])
    app = create_app({"qwen3": ModelEntry("qwen3", engine, QWEN3, tokenizer=TOKENIZER)})
    body = {"model": "qwen3", "max_tokens": 64, "messages": ASK, "stream": True}
    with TestClient(app) as http:
        raw = http.post("/v1/messages", json=body).content
    written = [part + b"\n\n" for part in raw.split(b"\n\n") if part]
    assert sum(b'"text_delta"' in event for event in written) > 1
    for event in written:  # the text deltas' own path writes the same bytes as sse()
        name, data = event.decode().split("\n", 1)
        assert event == sse(name[len("event: ") :], json.loads(data[len("data: ") :]))


def test_sdk_parse_gets_its_model_from_a_constrained_reply() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Weather(pydantic.BaseModel):
        city: str
        sunny: bool

    engine = ScriptedBackend(['{"city": "Paris", "sunny": true}<|im_end|>'])
    app = create_app({"qwen": ModelEntry("qwen", engine, chatfmt.get_template("qwen2.5"))})
    with TestClient(app) as http:
        client = anthropic.Anthropic(
            base_url="http://testserver", api_key="x", http_client=http, max_retries=0
        )
        if not hasattr(client.messages, "parse"):
            pytest.skip("this anthropic SDK has no messages.parse")
        reply = client.messages.parse(
            model="qwen", max_tokens=64, messages=ASK, output_format=Weather
        )
    assert reply.parsed_output == Weather(city="Paris", sunny=True)
    assert engine.requests[0].constraint is not None  # the engine is told the schema
