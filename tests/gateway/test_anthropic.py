"""Anthropic's Messages API end to end: the official ``anthropic`` SDK → ``/v1/messages`` →
the gateway → a fake engine (``_fake_server.py``), which replays scripted outputs and records
what it was sent, so each test checks both what the client got and the prompt the engine saw.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
anthropic = pytest.importorskip("anthropic")
httpx = pytest.importorskip("httpx")

import chatfmt  # noqa: E402
from _anthropic_cases import ASK, QWEN3, TOKENIZER, WEATHER, WEATHER_FUNCTION  # noqa: E402
from _fake_server import FakeCompletionsServer, gateway  # noqa: E402
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402

KEY = "anthropic-test-key"
QWEN = chatfmt.get_template("qwen2.5")
USE = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
THOUGHT = "<think>\nThe user wants the weather.\n</think>\n\n"


@pytest.fixture(scope="module")
def url(engine: FakeCompletionsServer) -> Iterator[str]:
    def backend() -> OpenAICompletionsBackend:
        return OpenAICompletionsBackend(engine.base_url, model="fake-model")

    models = {
        "qwen3": ModelEntry("qwen3", backend(), QWEN3, tokenizer=TOKENIZER),
        "qwen": ModelEntry("qwen", backend(), QWEN, tokenizer=TOKENIZER),
    }
    with gateway(create_app(models, api_key=KEY, thinking_secret="shared")) as base:
        yield base


@pytest.fixture
def client(url: str) -> Iterator[Any]:
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0, timeout=20) as c:
        yield c


def history(message: Any) -> list[dict[str, Any]]:
    """An assistant message as the SDK returned it, ready to be sent back."""
    return [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
    ]


# ---------------------------------------------------------------------- plain and streamed
def test_plain_message_renders_the_template_and_answers(client: Any, fake: Any) -> None:
    fake.replies.append("Sunny and warm.<|im_end|>")
    fake.cached_tokens = 7
    reply = client.messages.create(  # the SDK 2.x leaves out sampling fields: sent as extras
        model="qwen",
        max_tokens=64,
        system="Be brief.",
        messages=ASK,
        extra_body={"temperature": 0.2, "top_k": 5},
    )
    assert [b.type for b in reply.content] == ["text"]
    assert reply.content[0].text == "Sunny and warm."
    assert reply.stop_reason == "end_turn" and reply.stop_sequence is None
    assert reply.role == "assistant" and reply.model == "qwen" and reply.id.startswith("msg_")
    sent = fake.requests[0]
    assert sent["prompt"] == chatfmt.render(
        [{"role": "system", "content": "Be brief."}, *ASK], QWEN
    )
    assert sent["max_tokens"] == 64 and sent["temperature"] == 0.2 and sent["top_k"] == 5
    assert reply.usage.input_tokens == len(sent["prompt"])  # the engine's count (characters here)
    assert reply.usage.output_tokens == len("Sunny and warm.")
    assert reply.usage.cache_read_input_tokens == 7


def test_streaming_text_and_final_message(client: Any, fake: Any) -> None:
    fake.replies.append("It is sunny and warm today.<|im_end|>")
    with client.messages.stream(model="qwen", max_tokens=64, messages=ASK) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "It is sunny and warm today."
    assert final.content[0].text == text and final.stop_reason == "end_turn"
    prompt = chatfmt.render(ASK, QWEN)
    assert final.usage.input_tokens == len(TOKENIZER.encode(prompt))  # counted before generation
    assert final.usage.output_tokens == len(text)  # the engine's count (characters here)


def test_streamed_events_in_order(url: str, fake: Any) -> None:
    fake.replies.append("Hello there, friend.<|im_end|>")
    fake.chunk_delay = 0.005  # each event in its own read (else the gateway joins them)
    body = {"model": "qwen", "max_tokens": 32, "messages": ASK, "stream": True}
    try:
        with httpx.stream("POST", url + "/v1/messages", json=body, headers={"x-api-key": KEY}) as r:
            events = sse_events(r.iter_lines())
    finally:
        fake.chunk_delay = 0.0
    names = [name for name, _ in events]
    deltas = names.count("content_block_delta")
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        *["content_block_delta"] * deltas,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert deltas > 1  # streamed as the engine wrote it, not at the end
    assert all(data["type"] == name for name, data in events)
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    assert start["usage"]["input_tokens"] == len(TOKENIZER.encode(chatfmt.render(ASK, QWEN)))
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == "Hello there, friend."
    assert events[-2][1]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}


def sse_events(lines: Iterator[str]) -> list[tuple[str, dict[str, Any]]]:
    """``(event, data)`` of each server-sent event (every event names itself)."""
    out: list[tuple[str, dict[str, Any]]] = []
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            assert name is not None, "an event without its name"
            out.append((name, json.loads(line[len("data: ") :])))
            name = None
    return out


def test_a_request_shaped_as_claude_code_sends_it(url: str, fake: Any) -> None:
    fake.replies.append("Done.<|im_end|>")
    cached = {"type": "ephemeral"}
    body = {
        "model": "qwen",
        "max_tokens": 32,
        "system": [
            {"type": "text", "text": "You are a coding agent.", "cache_control": cached},
            {"type": "text", "text": "Be brief."},
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>cwd: /tmp</system-reminder>"},
                    {"type": "text", "text": "List the files.", "cache_control": cached},
                ],
            }
        ],
        "tools": [{**WEATHER, "type": "custom", "cache_control": cached}],
        "metadata": {"user_id": "someone"},
        "stream": True,
    }
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "anthropic-beta": "x-2025"}
    with httpx.stream("POST", url + "/v1/messages?beta=true", json=body, headers=headers) as reply:
        events = sse_events(reply.iter_lines())
    assert events[-1][0] == "message_stop"
    chat = [
        {"role": "system", "content": "You are a coding agent.\n\nBe brief."},
        {
            "role": "user",
            "content": "<system-reminder>cwd: /tmp</system-reminder>\n\nList the files.",
        },
    ]
    assert fake.requests[0]["prompt"] == chatfmt.render(chat, QWEN, tools=[WEATHER_FUNCTION])


# ---------------------------------------------------------------------- stops
def test_stop_sequence_is_named(client: Any, fake: Any) -> None:
    fake.replies += ["one two END three<|im_end|>", "one two three four five six"]
    reply = client.messages.create(
        model="qwen", max_tokens=64, messages=ASK, stop_sequences=["END", "HALT"]
    )
    assert reply.content[0].text == "one two "
    assert reply.stop_reason == "stop_sequence" and reply.stop_sequence == "END"
    assert {"END", "HALT", "<|im_end|>"} <= set(fake.requests[0]["stop"])
    cut = client.messages.create(model="qwen", max_tokens=7, messages=ASK)
    assert cut.stop_reason == "max_tokens" and cut.content[0].text == "one two"


# ---------------------------------------------------------------------- tools
@pytest.mark.parametrize("stream", [False, True])
def test_tool_use_round_trip(client: Any, fake: Any, stream: bool) -> None:
    fake.replies += ["Let me check.\n" + CALL + "<|im_end|>", "Sunny, 24 °C.<|im_end|>"]
    kwargs: dict[str, Any] = {"model": "qwen", "max_tokens": 128, "tools": [WEATHER]}
    if stream:
        with client.messages.stream(messages=ASK, **kwargs) as events:
            first = events.get_final_message()
    else:
        first = client.messages.create(messages=ASK, **kwargs)
    assert [b.type for b in first.content] == ["text", "tool_use"]
    call = first.content[1]
    assert call.name == "get_weather" and call.input == {"city": "Paris"}
    assert first.stop_reason == "tool_use"
    assert fake.requests[0]["prompt"] == chatfmt.render(ASK, QWEN, tools=[WEATHER_FUNCTION])

    result = {"type": "tool_result", "tool_use_id": call.id, "content": "sunny, 24 °C"}
    conversation = [*ASK, *history(first), {"role": "user", "content": [result]}]
    second = client.messages.create(messages=conversation, **kwargs)
    assert second.content[0].text == "Sunny, 24 °C." and second.stop_reason == "end_turn"
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ]
    chat = [
        *ASK,
        {"role": "assistant", "content": first.content[0].text, "tool_calls": calls},
        {"role": "tool", "tool_call_id": call.id, "name": "get_weather", "content": "sunny, 24 °C"},
    ]
    assert fake.requests[1]["prompt"] == chatfmt.render(chat, QWEN, tools=[WEATHER_FUNCTION])


def test_error_tool_results_say_so(client: Any, fake: Any) -> None:
    fake.replies.append("Sorry.<|im_end|>")
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "X"}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "is_error": True,
        "content": [{"type": "text", "text": "no such city"}],
    }
    conversation = [
        *ASK,
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result, {"type": "text", "text": "Try again?"}]},
    ]
    client.messages.create(model="qwen", max_tokens=32, messages=conversation, tools=[WEATHER])
    prompt = fake.requests[0]["prompt"]
    assert "<tool_response>\nError: no such city\n</tool_response>" in prompt
    assert prompt.index("no such city") < prompt.index("Try again?")


@pytest.mark.parametrize("stream", [False, True])
def test_tool_choice_any_prefills_a_call(client: Any, fake: Any, stream: bool) -> None:
    fake.replies.append('get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>')
    kwargs: dict[str, Any] = {
        "model": "qwen",
        "max_tokens": 64,
        "messages": ASK,
        "tools": [WEATHER],
        "tool_choice": {"type": "any"},
    }
    if stream:
        with client.messages.stream(**kwargs) as events:
            reply = events.get_final_message()
    else:
        reply = client.messages.create(**kwargs)
    assert [b.type for b in reply.content] == ["tool_use"]
    assert reply.content[0].input == {"city": "Oslo"} and reply.stop_reason == "tool_use"
    prompt = chatfmt.render(ASK, QWEN, tools=[WEATHER_FUNCTION])
    assert fake.requests[0]["prompt"] == prompt + '<tool_call>\n{"name": "'


def test_tool_choice_tool_prefills_the_name_and_one_call_is_kept(client: Any, fake: Any) -> None:
    second = CALL.replace("Paris", "Rome")
    fake.replies.append('{"city": "Paris"}}\n</tool_call>\n' + second + "<|im_end|>")
    choice = {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}
    reply = client.messages.create(
        model="qwen", max_tokens=64, messages=ASK, tools=[WEATHER], tool_choice=choice
    )
    assert [(b.name, b.input) for b in reply.content] == [("get_weather", {"city": "Paris"})]
    assert fake.requests[0]["prompt"].endswith('<tool_call>\n{"name": "get_weather", "arguments": ')


def test_tool_choice_none_renders_no_tools(client: Any, fake: Any) -> None:
    fake.replies.append("No tools.<|im_end|>")
    client.messages.create(
        model="qwen", max_tokens=16, messages=ASK, tools=[WEATHER], tool_choice={"type": "none"}
    )
    assert fake.requests[0]["prompt"] == chatfmt.render(ASK, QWEN)


def test_invalid_call_is_an_api_error_never_a_reply(client: Any, fake: Any) -> None:
    written = '<tool_call>\n{"name": "get_weather", "arguments": {"city": </tool_call>'
    fake.replies.append(written)
    with pytest.raises(anthropic.InternalServerError) as info:
        client.messages.create(model="qwen", max_tokens=200, messages=ASK, tools=[WEATHER])
    error = info.value.body["error"]
    assert error["type"] == "api_error" and "not valid JSON" in error["message"]
    assert repr(written) in error["message"]


def test_a_call_cut_by_max_tokens_is_returned_with_an_empty_input(client: Any, fake: Any) -> None:
    fake.replies.append(CALL)
    reply = client.messages.create(model="qwen", max_tokens=55, messages=ASK, tools=[WEATHER])
    assert reply.stop_reason == "max_tokens"
    assert [(b.type, b.name, b.input) for b in reply.content] == [("tool_use", "get_weather", {})]


def test_output_format_is_checked(client: Any, fake: Any) -> None:
    schema = {"type": "object", "properties": {"sunny": {"type": "boolean"}}, "required": ["sunny"]}
    output = {"format": {"type": "json_schema", "schema": schema}}
    fake.replies += ['{"sunny": true}<|im_end|>', "It is sunny.<|im_end|>"]
    reply = client.messages.create(model="qwen", max_tokens=32, messages=ASK, output_config=output)
    assert json.loads(reply.content[0].text) == {"sunny": True}
    with pytest.raises(anthropic.InternalServerError) as err:
        client.messages.create(model="qwen", max_tokens=32, messages=ASK, output_config=output)
    assert "It is sunny." in err.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as no_tools:
        client.messages.create(
            model="qwen", max_tokens=8, messages=ASK, tool_choice={"type": "any"}
        )
    assert "tool_choice any needs tools" in no_tools.value.body["error"]["message"]


# ---------------------------------------------------------------------- thinking
@pytest.mark.parametrize("stream", [False, True])
def test_thinking_blocks_are_signed_and_accepted_back(client: Any, fake: Any, stream: bool) -> None:
    fake.replies += [THOUGHT + CALL + "<|im_end|>", "Sunny.<|im_end|>"]
    kwargs: dict[str, Any] = {
        "model": "qwen3",
        "max_tokens": 2048,
        "tools": [WEATHER],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    if stream:
        with client.messages.stream(messages=ASK, **kwargs) as events:
            first = events.get_final_message()
    else:
        first = client.messages.create(messages=ASK, **kwargs)
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    thinking = first.content[0]
    assert thinking.thinking == "The user wants the weather." and thinking.signature
    result = {"type": "tool_result", "tool_use_id": first.content[1].id, "content": "sunny"}
    conversation = [*ASK, *history(first), {"role": "user", "content": [result]}]
    second = client.messages.create(messages=conversation, **kwargs)
    assert second.content[0].text == "Sunny."
    # the thinking of the turn that called the tool is shown again, as Qwen3's template does
    assert "<think>\nThe user wants the weather.\n</think>" in fake.requests[1]["prompt"]

    forged = history(first)
    forged[0]["content"][0]["thinking"] = "Something else."
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(
            messages=[*ASK, *forged, {"role": "user", "content": [result]}], **kwargs
        )
    message = err.value.body["error"]["message"]
    assert message.startswith("messages[1].content[0].signature: not this server's signature")


def test_thinking_switch_follows_the_request(client: Any, fake: Any) -> None:
    fake.replies += ["Hi.<|im_end|>", "Hi.<|im_end|>"]
    client.messages.create(
        model="qwen3", max_tokens=16, messages=ASK, thinking={"type": "disabled"}
    )
    client.messages.create(
        model="qwen3",
        max_tokens=2048,
        messages=ASK,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    assert fake.requests[0]["prompt"] == chatfmt.render(ASK, QWEN3, enable_thinking=False)
    assert fake.requests[1]["prompt"] == chatfmt.render(ASK, QWEN3, enable_thinking=True)


def test_thinking_signatures_hold_across_gateways_sharing_the_secret(fake: Any) -> None:
    fake.replies += [THOUGHT + "Hello.<|im_end|>", "Again.<|im_end|>", "Never.<|im_end|>"]

    def app(secret: str | None) -> Any:
        backend = OpenAICompletionsBackend(fake.base_url, model="m")
        return create_app({"qwen3": ModelEntry("qwen3", backend, QWEN3)}, thinking_secret=secret)

    with gateway(app("s3cret")) as one, gateway(app("s3cret")) as two, gateway(app(None)) as other:
        clients = [
            anthropic.Anthropic(base_url=b, api_key="x", max_retries=0) for b in (one, two, other)
        ]
        first = clients[0].messages.create(model="qwen3", max_tokens=64, messages=ASK)
        later = [*ASK, *history(first), {"role": "user", "content": "And tomorrow?"}]
        assert clients[1].messages.create(model="qwen3", max_tokens=64, messages=later).content
        with pytest.raises(anthropic.BadRequestError):
            clients[2].messages.create(model="qwen3", max_tokens=64, messages=later)


# ---------------------------------------------------------------------- count_tokens
def test_count_tokens_counts_the_prompt(client: Any, fake: Any) -> None:
    counted = client.messages.count_tokens(
        model="qwen", system="Be brief.", messages=ASK, tools=[WEATHER]
    )
    chat = [{"role": "system", "content": "Be brief."}, *ASK]
    prompt = chatfmt.render(chat, QWEN, tools=[WEATHER_FUNCTION])
    assert counted.input_tokens == len(TOKENIZER.encode(prompt))
    forced = client.messages.count_tokens(
        model="qwen", messages=ASK, tools=[WEATHER], tool_choice={"type": "any"}
    )
    assert forced.input_tokens > len(
        TOKENIZER.encode(chatfmt.render(ASK, QWEN, tools=[WEATHER_FUNCTION]))
    )
    assert not fake.requests  # nothing generated


# ---------------------------------------------------------------------- errors
def test_api_key_by_header_and_anthropic_error_shape(url: str, fake: Any) -> None:
    with (
        anthropic.Anthropic(base_url=url, api_key="wrong", max_retries=0) as c,
        pytest.raises(anthropic.AuthenticationError) as err,
    ):
        c.messages.create(model="qwen", max_tokens=8, messages=ASK)
    assert err.value.body["type"] == "error"
    assert err.value.body["error"]["type"] == "authentication_error"
    body = {"model": "qwen", "max_tokens": 8, "messages": ASK}
    fake.replies.append("Hi.<|im_end|>")
    bearer = httpx.post(url + "/v1/messages", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert bearer.status_code == 200 and bearer.json()["content"][0]["text"] == "Hi."
    versioned = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    missing = httpx.post(url + "/v1/messages", json={**body, "max_tokens": None}, headers=versioned)
    assert missing.status_code == 400
    assert missing.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": missing.json()["error"]["message"]},
    }
    assert missing.json()["error"]["message"].startswith("max_tokens:")
    gone = httpx.get(url + "/v1/messages", headers=versioned)
    assert gone.status_code == 405 and gone.json()["type"] == "error"


@pytest.mark.parametrize(
    ("messages", "extra", "where"),
    [
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "url", "url": "x"}}],
                }
            ],
            {},
            "messages[0].content[0]: image blocks are not supported",
        ),
        (
            [
                *ASK,
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]},
                {"role": "user", "content": "?"},
            ],
            {},
            "messages[1].content[0]: redacted_thinking blocks are not supported",
        ),
        (
            [*ASK, {"role": "assistant", "content": "The answer is"}],
            {},
            "messages[1]: a final assistant message (prefill) is not supported",
        ),
        (
            ASK,
            {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
            "tools[0].type: the server tool 'web_search_20250305' is not supported",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}],
                }
            ],
            {},
            "messages[0].content[0]: tool_use blocks belong in assistant messages",
        ),
        (
            [
                *ASK,
                {"role": "assistant", "content": [{**USE, "id": "toolu_1"}]},
                {"role": "user", "content": [{**RESULT, "tool_use_id": "toolu_2"}]},
            ],
            {"tools": [WEATHER]},
            "messages[2].content[0].tool_use_id: tool_call_id 'toolu_2' matches no earlier",
        ),
        (
            [*ASK, {"role": "assistant", "content": [{**USE, "input": 3}]}, ASK[0]],
            {},
            "messages[1].content[0].input: Input should be",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text"}]}
                    ],
                }
            ],
            {},
            "messages[0].content[0].content[0].text: Field required",
        ),
        (
            ASK,
            {"tools": [WEATHER], "tool_choice": {"type": "tool", "name": "nope"}},
            "tool_choice names 'nope', which is not in tools",
        ),
        (
            ASK,
            {"tools": [{**WEATHER, "input_schema": {"type": "object", "properties": 3}}]},
            "tools[0].input_schema",
        ),
    ],
)
def test_refused_requests_name_the_block(
    client: Any, fake: Any, messages: Any, extra: dict[str, Any], where: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(model="qwen", max_tokens=8, messages=messages, **extra)
    assert err.value.body["error"]["type"] == "invalid_request_error"
    assert where in err.value.body["error"]["message"]
    assert not fake.requests


def test_unknown_model_is_404(client: Any) -> None:
    with pytest.raises(anthropic.NotFoundError) as err:
        client.messages.create(model="claude-opus", max_tokens=8, messages=ASK)
    assert err.value.body["error"]["type"] == "not_found_error"


def test_backend_dying_mid_stream_is_an_error_event(client: Any, fake: Any) -> None:
    fake.mode = "die"
    fake.replies.append("This answer will be cut off halfway through by the engine dying.")
    received = ""
    with (
        pytest.raises(anthropic.APIStatusError) as err,
        client.messages.stream(model="qwen", max_tokens=64, messages=ASK) as stream,
    ):
        for text in stream.text_stream:
            received += text
    assert received and "halfway" not in received
    assert "broke off" in str(err.value)


def test_backend_error_before_streaming_is_an_http_error(client: Any, fake: Any) -> None:
    fake.mode = "http500"
    with pytest.raises(anthropic.APIStatusError) as err:
        client.messages.create(model="qwen", max_tokens=8, messages=ASK, stream=True)
    assert err.value.status_code == 502 and err.value.body["error"]["type"] == "api_error"
