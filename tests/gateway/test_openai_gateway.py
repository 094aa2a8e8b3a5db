"""The gateway (``chatfmt serve``) end to end: the official ``openai`` SDK → gateway → fake engine.

The gateway runs under uvicorn in a background thread on 127.0.0.1; the engine is the fake
completions server of ``_fake_server.py``, which replays scripted outputs and records the
requests it was sent, so each test checks both what the client got and what the engine saw.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

import chatfmt  # noqa: E402
from _fake_server import (  # noqa: E402
    FakeCompletionsServer,
    StallingBackend,
    chatfmt_serve,
    gateway,
    serve,
)
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402
from chatfmt.gateway import Limits, ModelEntry, create_app  # noqa: E402
from chatfmt.tokens import load_tokenizer  # noqa: E402

from _support import SHARED  # noqa: E402

KEY = "gateway-test-key"
BACKEND_KEY = "backend-secret-never-shown"
QWEN = chatfmt.get_template("qwen2.5")
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def slow_engine() -> Iterator[FakeCompletionsServer]:
    server = FakeCompletionsServer()
    server.mode = "slow"
    with serve(server) as running:
        yield running


@pytest.fixture(scope="module")
def url(engine: FakeCompletionsServer, slow_engine: FakeCompletionsServer) -> Iterator[str]:
    def backend(base: str, **kw: Any) -> OpenAICompletionsBackend:
        return OpenAICompletionsBackend(base, model="fake-model", api_key=BACKEND_KEY, **kw)

    models = {
        "qwen": ModelEntry("qwen", backend(engine.base_url), QWEN),
        "llama": ModelEntry("llama", backend(engine.base_url), chatfmt.get_template("llama3.1")),
        "down": ModelEntry("down", backend(f"http://127.0.0.1:{closed_port()}/v1"), QWEN),
        "slow": ModelEntry("slow", backend(slow_engine.base_url, read_timeout=0.3), QWEN),
    }
    with gateway(create_app(models, api_key=KEY)) as base:
        yield base


@pytest.fixture
def client(url: str) -> Iterator[Any]:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0, timeout=20) as c:
        yield c


def weather_history(call: Any) -> list[dict[str, Any]]:
    """The question, the assistant's call (as the SDK returned it) and the tool's answer."""
    return [
        *ASK,
        call.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.tool_calls[0].id, "content": "sunny, 24 °C"},
    ]


# ---------------------------------------------------------------------- chat
def test_plain_chat_renders_the_template_and_answers(client: Any, fake: Any) -> None:
    fake.replies.append("Sunny in Paris.<|im_end|>ignored")
    reply = client.chat.completions.create(model="qwen", messages=ASK, temperature=0.2, seed=7)
    choice = reply.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "Sunny in Paris."
    assert choice.finish_reason == "stop"
    assert reply.object == "chat.completion" and reply.model == "qwen"
    sent = fake.requests[0]
    assert sent["prompt"] == chatfmt.render(ASK, QWEN)
    assert "<|im_end|>" in sent["stop"]
    assert sent["temperature"] == 0.2 and sent["seed"] == 7
    # Usage is the engine's (the fake counts characters).
    assert reply.usage.prompt_tokens == len(sent["prompt"])
    assert reply.usage.completion_tokens == len("Sunny in Paris.")


def test_sampling_defaults_come_from_the_template_and_stop_words_add_up(
    client: Any, fake: Any
) -> None:
    fake.replies.append("one two three")
    client.chat.completions.create(
        model="qwen", messages=ASK, stop=["three"], max_completion_tokens=50
    )
    sent = fake.requests[0]
    assert sent["stop"] == [*QWEN.generation_config.all_stop_words, "three"]
    assert sent["temperature"] == QWEN.generation_config.temperature
    assert sent["max_tokens"] == 50


def test_token_limit_gives_finish_reason_length(client: Any, fake: Any) -> None:
    fake.replies.append("a long answer that does not fit")
    reply = client.chat.completions.create(model="qwen", messages=ASK, max_tokens=6)
    assert reply.choices[0].finish_reason == "length"
    assert reply.choices[0].message.content == "a long"


def test_streaming_chat_with_usage(client: Any, fake: Any) -> None:
    fake.replies.append("It is sunny and warm.<|im_end|>")
    chunks = list(
        client.chat.completions.create(
            model="qwen", messages=ASK, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "It is sunny and warm."
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert not chunks[-1].choices and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == len("It is sunny and warm.")
    assert len({c.id for c in chunks}) == 1


def test_reasoning_goes_to_reasoning_content(client: Any, fake: Any, url: str) -> None:
    fake.replies.append("<think>Paris is in France.</think>\n\nSunny.<|im_end|>")
    qwen3 = ModelEntry(
        "qwen3", OpenAICompletionsBackend(fake.base_url, model="m"), chatfmt.get_template("qwen3")
    )
    with gateway(create_app({"qwen3": qwen3})) as base:
        body = {"model": "qwen3", "messages": ASK}
        answer = httpx.post(base + "/v1/chat/completions", json=body).json()
    message = answer["choices"][0]["message"]
    assert message["content"] == "Sunny."
    assert message["reasoning_content"] == "Paris is in France."


def test_reasoning_the_template_cannot_show_is_left_out_as_the_agent_does(
    client: Any, fake: Any
) -> None:
    # A client sends back a reasoning model's turn to a template without reasoning.
    earlier = {"role": "assistant", "content": "Sunny.", "reasoning_content": "Paris, France."}
    history = [*ASK, earlier, {"role": "user", "content": "And tomorrow?"}]
    fake.replies.append("Rain.<|im_end|>")
    reply = client.chat.completions.create(model="qwen", messages=history)
    assert reply.choices[0].message.content == "Rain."
    without = [*ASK, {"role": "assistant", "content": "Sunny."}, history[-1]]
    assert fake.requests[0]["prompt"] == chatfmt.render(without, QWEN)


# ---------------------------------------------------------------------- tools
def test_tool_call_round_trip(client: Any, fake: Any) -> None:
    fake.replies += [CALL + "<|im_end|>", "Sunny, 24 °C.<|im_end|>"]
    first = client.chat.completions.create(model="qwen", messages=ASK, tools=[WEATHER_TOOL])
    assert first.choices[0].finish_reason == "tool_calls"
    call = first.choices[0].message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert fake.requests[0]["prompt"] == chatfmt.render(ASK, QWEN, tools=[WEATHER_TOOL])

    history = weather_history(first.choices[0].message)
    second = client.chat.completions.create(model="qwen", messages=history, tools=[WEATHER_TOOL])
    assert second.choices[0].message.content == "Sunny, 24 °C."
    assert fake.requests[1]["prompt"] == chatfmt.render(history, QWEN, tools=[WEATHER_TOOL])


def test_streamed_tool_call_has_openai_deltas(client: Any, fake: Any) -> None:
    output = "Let me check.\n" + CALL + "<|im_end|>"
    fake.replies.append(output)
    stream = client.chat.completions.create(
        model="qwen", messages=ASK, tools=[WEATHER_TOOL], stream=True
    )
    content, names, ids, arguments, finish = "", [], set(), "", None
    for chunk in stream:
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for entry in delta.tool_calls or ():
            assert entry.index == 0
            if entry.id is not None:
                ids.add(entry.id)
            if entry.function and entry.function.name:
                names.append(entry.function.name)
            arguments += (entry.function and entry.function.arguments) or ""
        finish = chunk.choices[0].finish_reason or finish
    assert content.strip() == "Let me check."
    assert content == chatfmt.parse(output, QWEN)["content"]  # as the whole parse says
    assert names == ["get_weather"] and len(ids) == 1  # the name and id once
    assert json.loads(arguments) == {"city": "Paris"}
    assert finish == "tool_calls"


def test_invalid_call_is_a_model_error_never_a_reply(client: Any, fake: Any) -> None:
    written = '<tool_call>\n{"name": "get_weather", "arguments": {"city": </tool_call>'
    fake.replies.append(written)
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="qwen", messages=ASK, tools=[WEATHER_TOOL])
    error = info.value.body
    assert error["type"] == "model_error" and error["code"] == "invalid_model_output"
    assert "tool_calls[0].function.arguments: not valid JSON" in error["message"]
    assert repr(written) in error["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_tool_calls_false_keeps_the_first_call(
    client: Any, fake: Any, stream: bool
) -> None:
    second = CALL.replace("Paris", "Rome")
    fake.replies += [CALL + "\n" + second + "<|im_end|>"] * 2
    kwargs: dict[str, Any] = {"model": "qwen", "messages": ASK, "tools": [WEATHER_TOOL]}
    both = client.chat.completions.create(**kwargs)
    result = client.chat.completions.create(**kwargs, parallel_tool_calls=False, stream=stream)
    if stream:
        chunks = list(result)
        indexes = {e.index for c in chunks for e in c.choices[0].delta.tool_calls or ()}
        finish = chunks[-1].choices[0].finish_reason
    else:
        indexes = set(range(len(result.choices[0].message.tool_calls)))
        finish = result.choices[0].finish_reason
    assert len(both.choices[0].message.tool_calls) == 2
    assert indexes == {0} and finish == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
def test_tool_choice_required_prefills_the_call_opening(
    client: Any, fake: Any, stream: bool
) -> None:
    fake.replies.append('get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>')
    result = client.chat.completions.create(
        model="qwen", messages=ASK, tools=[WEATHER_TOOL], tool_choice="required", stream=stream
    )
    if stream:
        deltas = [c.choices[0].delta for c in result]
        entries = [e for d in deltas for e in d.tool_calls or ()]
        name = "".join(e.function.name or "" for e in entries if e.function)
        arguments = "".join(e.function.arguments or "" for e in entries if e.function)
    else:
        call = result.choices[0].message.tool_calls[0]
        name, arguments = call.function.name, call.function.arguments
    assert name == "get_weather" and json.loads(arguments) == {"city": "Oslo"}
    prompt = chatfmt.render(ASK, QWEN, tools=[WEATHER_TOOL])
    assert fake.requests[0]["prompt"] == prompt + '<tool_call>\n{"name": "'


def test_named_tool_choice_prefills_the_name(client: Any, fake: Any) -> None:
    fake.replies.append('{"city": "Rome"}}\n</tool_call><|im_end|>')
    choice = {"type": "function", "function": {"name": "get_weather"}}
    reply = client.chat.completions.create(
        model="qwen", messages=ASK, tools=[WEATHER_TOOL], tool_choice=choice
    )
    call = reply.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Rome"}
    # The name is closed: the model cannot extend it (get_weather_city …).
    assert fake.requests[0]["prompt"].endswith('<tool_call>\n{"name": "get_weather", "arguments": ')
    # Usage counts what the engine did: the prefill is part of its prompt.
    assert reply.usage.prompt_tokens == len(fake.requests[0]["prompt"])


def test_named_tool_choice_over_llama_json(client: Any, fake: Any) -> None:
    fake.replies.append('{"city": "Lima"}}<|eot_id|>')
    choice = {"type": "function", "function": {"name": "get_weather"}}
    reply = client.chat.completions.create(
        model="llama", messages=ASK, tools=[WEATHER_TOOL], tool_choice=choice
    )
    call = reply.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Lima"},
    )
    assert fake.requests[0]["prompt"].endswith('\n\n{"name": "get_weather", "parameters": ')


def test_tool_choice_none_renders_no_tools(client: Any, fake: Any) -> None:
    fake.replies.append("No tools needed.<|im_end|>")
    client.chat.completions.create(
        model="qwen", messages=ASK, tools=[WEATHER_TOOL], tool_choice="none"
    )
    assert fake.requests[0]["prompt"] == chatfmt.render(ASK, QWEN)


def test_tool_choice_errors_name_the_field(client: Any, fake: Any) -> None:
    choice = {"type": "function", "function": {"name": "nope"}}
    with pytest.raises(openai.BadRequestError) as named:
        client.chat.completions.create(
            model="qwen", messages=ASK, tools=[WEATHER_TOOL], tool_choice=choice
        )
    with pytest.raises(openai.BadRequestError) as required:
        client.chat.completions.create(model="qwen", messages=ASK, tool_choice="required")
    assert named.value.body["param"] == required.value.body["param"] == "tool_choice"
    assert not fake.requests


def test_tools_for_a_template_without_a_tool_format_are_refused(fake: Any) -> None:
    entry = ModelEntry(
        "plain", OpenAICompletionsBackend(fake.base_url, model="m"), chatfmt.get_template("chatml")
    )
    with gateway(create_app({"plain": entry})) as base:
        body = {"model": "plain", "messages": ASK, "tools": [WEATHER_TOOL]}
        refused = httpx.post(base + "/v1/chat/completions", json=body)
        fake.replies.append("Hello.<|im_end|>")
        body["tool_choice"] = "none"
        answered = httpx.post(base + "/v1/chat/completions", json=body)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "tools"
    assert answered.json()["choices"][0]["message"]["content"] == "Hello."
    assert [r["prompt"] for r in fake.requests] == [chatfmt.render(ASK, "chatml")]


@pytest.mark.parametrize(
    ("template", "opening", "rest"),
    [
        ("qwen2.5", '<tool_call>\n{"name": "', '", "arguments": {"city": "Oslo"}}\n</tool_call>'),
        ("hermes3", '<tool_call>\n{"name": "', '", "arguments": {"city": "Oslo"}}\n</tool_call>'),
        ("llama3.1", '{"name": "', '", "parameters": {"city": "Oslo"}}'),
        (
            "internlm2",
            '<|action_start|><|plugin|>\n{"name": "',
            '", "parameters": {"city": "Oslo"}}<|action_end|>',
        ),
        ("mistral-v3", '[TOOL_CALLS] [{"name": "', '", "arguments": {"city": "Oslo"}}]'),
        ("granite3", '<|tool_call|>[{"name": "', '", "arguments": {"city": "Oslo"}}]'),
    ],
)
def test_call_openings_are_found_from_the_template(template: str, opening: str, rest: str) -> None:
    from chatfmt.gateway.tool_choice import prefill_for

    tpl = chatfmt.get_template(template)
    named = {"type": "function", "function": {"name": "get_weather"}}
    assert prefill_for(tpl, {}, "required") == opening
    closed = rest.split("{", 1)[0]  # the name's closing delimiter, before the arguments
    assert prefill_for(tpl, {}, named) == opening + "get_weather" + closed
    # What the model writes after the prefill completes the forced call.
    parsed = chatfmt.parse(opening + "get_weather" + rest, tpl, tools=[WEATHER_TOOL])
    (call,) = parsed["tool_calls"]
    assert "error" not in call and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Oslo"}


def test_templates_without_a_call_opening_are_refused_clearly() -> None:
    from chatfmt.gateway.tool_choice import prefill_for

    named = {"type": "function", "function": {"name": "get_weather"}}
    glm = chatfmt.get_template("chatglm3")  # a call is its name: only a named call can be forced
    assert prefill_for(glm, {}, named).strip().startswith("get_weather\n")
    with pytest.raises(chatfmt.ChatFmtError, match="name the function instead"):
        prefill_for(glm, {}, "required")
    with pytest.raises(chatfmt.ChatFmtError, match="no tool-call format"):
        prefill_for(chatfmt.get_template("chatml"), {}, "required")
    assert prefill_for(chatfmt.get_template("chatml"), {}, "auto") == ""


# ---------------------------------------------------------------------- errors
def test_missing_or_wrong_api_key_is_401(url: str, fake: Any) -> None:
    with (
        openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0) as c,
        pytest.raises(openai.AuthenticationError) as err,
    ):
        c.chat.completions.create(model="qwen", messages=ASK)
    assert err.value.status_code == 401 and err.value.body["code"] == "invalid_api_key"
    raw = httpx.post(url + "/v1/chat/completions", json={"model": "qwen", "messages": ASK})
    assert raw.status_code == 401  # no Authorization header at all
    assert set(raw.json()["error"]) == {"message", "type", "param", "code"}
    assert httpx.get(url + "/v1/models").status_code == 401
    assert httpx.get(url + "/health").json() == {"status": "ok"}  # health needs no key
    assert not fake.requests


def test_unknown_model_is_404(client: Any) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="gpt-17", messages=ASK)
    assert err.value.body["code"] == "model_not_found" and err.value.body["param"] == "model"


def test_models_are_listed(client: Any) -> None:
    assert [m.id for m in client.models.list()] == ["qwen", "llama", "down", "slow"]


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        (
            [
                *ASK,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{not json"},
                        }
                    ],
                },
            ],
            "messages[1].tool_calls[0].function.arguments",
        ),
        ([{"role": "wizard", "content": "x"}], "messages[0].role"),
        ([{"role": "tool", "content": "x", "tool_call_id": "c"}], "messages[0].role"),
        ("not a list", "messages"),
    ],
)
def test_invalid_messages_are_400_with_param(
    client: Any, fake: Any, messages: Any, param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="qwen", messages=messages)
    assert err.value.status_code == 400
    assert err.value.body["param"] == param
    assert not fake.requests


def test_invalid_json_and_unsupported_fields_are_400(url: str, client: Any) -> None:
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    bad = httpx.post(url + "/v1/chat/completions", content=b"{nope", headers=headers)
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
    with pytest.raises(openai.BadRequestError) as n:
        client.chat.completions.create(model="qwen", messages=ASK, n=0)
    assert n.value.body["param"] == "n"
    with pytest.raises(openai.BadRequestError) as kwargs:
        client.chat.completions.create(
            model="qwen", messages=ASK, extra_body={"chat_template_kwargs": {"no_such": 1}}
        )
    assert kwargs.value.body["param"] == "chat_template_kwargs"
    with pytest.raises(openai.BadRequestError) as typed:
        client.chat.completions.create(model="qwen", messages=ASK, temperature="hot")
    assert typed.value.body["param"] == "temperature"


@pytest.mark.parametrize("stream", [False, True])
def test_backend_down_is_502_and_hides_the_backend_key(client: Any, stream: bool) -> None:
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(model="down", messages=ASK, stream=stream)
    assert err.value.status_code == 502
    assert err.value.body["code"] == "backend_unreachable"
    assert BACKEND_KEY not in json.dumps(err.value.body)


def test_backend_timeout_is_504(client: Any) -> None:
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(model="slow", messages=ASK, stream=True)
    assert err.value.status_code == 504 and err.value.body["code"] == "backend_timeout"


def test_backend_error_status_is_502(client: Any, fake: Any) -> None:
    fake.mode = "http500"
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(model="qwen", messages=ASK)
    assert err.value.status_code == 502 and "engine exploded" in err.value.body["message"]


def test_backend_killed_mid_stream_gives_an_error_event_then_serves_on(
    client: Any, fake: Any
) -> None:
    fake.mode = "die"
    fake.replies.append("This answer will be cut off halfway through by the engine dying.")
    stream = client.chat.completions.create(model="qwen", messages=ASK, stream=True)
    received = ""
    with pytest.raises(openai.APIError) as err:
        for chunk in stream:
            received += chunk.choices[0].delta.content or ""
    assert received and "halfway" not in received  # part of the answer came, then the error
    assert "broke off" in str(err.value.message)
    fake.mode = "ok"
    fake.replies.append("Still here.<|im_end|>")
    reply = client.chat.completions.create(model="qwen", messages=ASK)
    assert reply.choices[0].message.content == "Still here."


def test_client_disconnect_cancels_the_backend_stream(url: str, fake: Any) -> None:
    fake.chunk_delay = 0.02
    fake.replies.append("x" * 3000)  # 1000 pieces: 20 s if nobody stops it
    headers = {"Authorization": f"Bearer {KEY}"}
    body = {"model": "qwen", "messages": ASK, "stream": True}
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, headers=headers) as resp:
        lines = resp.iter_lines()
        assert next(lines).startswith("data: ")  # the stream has started; now leave
    deadline = time.monotonic() + 10
    while fake.aborted == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake.aborted == 1


def test_client_disconnect_closes_a_silent_backend_stream() -> None:
    backend = StallingBackend()
    with gateway(create_app({"m": ModelEntry("m", backend, QWEN)})) as base:
        body = {"model": "m", "messages": ASK, "stream": True}
        with httpx.stream("POST", base + "/v1/chat/completions", json=body) as resp:
            lines = resp.iter_lines()
            assert next(lines).startswith("data: ")
            assert not backend.closed.is_set()
        # Nothing is being written when the client leaves: the gateway must notice anyway.
        assert backend.closed.wait(timeout=10)


def test_limits_body_messages_and_prompt_tokens(engine: FakeCompletionsServer) -> None:
    tokenizer = load_tokenizer(SHARED / "tokenizers" / "qwen3")
    backend = OpenAICompletionsBackend(engine.base_url, model="m")
    entry = ModelEntry("qwen", backend, QWEN, tokenizer=tokenizer)
    limits = Limits(max_body_bytes=4000, max_messages=3, max_prompt_tokens=60)
    with (
        gateway(create_app({"qwen": entry}, limits=limits)) as base,
        openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0) as c,
    ):
        with pytest.raises(openai.APIStatusError) as big:
            c.chat.completions.create(
                model="qwen", messages=[{"role": "user", "content": "a" * 5000}]
            )
        with pytest.raises(openai.BadRequestError) as many:
            c.chat.completions.create(model="qwen", messages=ASK * 4)
        with pytest.raises(openai.BadRequestError) as long:
            c.chat.completions.create(
                model="qwen", messages=[{"role": "user", "content": "word " * 80}]
            )
    assert big.value.status_code == 413
    assert many.value.body["param"] == "messages" and "too many" in many.value.body["message"]
    assert long.value.body["code"] == "context_length_exceeded"


# ---------------------------------------------------------------------- render
def test_render_gives_prompt_ids_and_flags(engine: FakeCompletionsServer) -> None:
    tokenizer = load_tokenizer(SHARED / "tokenizers" / "qwen3")
    backend = OpenAICompletionsBackend(engine.base_url, model="m")
    entry = ModelEntry("qwen", backend, QWEN, tokenizer=tokenizer)
    with gateway(create_app({"qwen": entry})) as base:
        body: dict[str, Any] = {"model": "qwen", "messages": ASK, "tools": [WEATHER_TOOL]}
        plain = httpx.post(base + "/v1/render", json=body).json()
        body["tool_choice"] = "required"
        forced = httpx.post(base + "/v1/render", json=body).json()
        body.pop("tool_choice")
        history = [*ASK, {"role": "assistant", "content": "Sunny."}]
        trained = httpx.post(
            base + "/v1/render", json={**body, "messages": history, "add_generation_prompt": False}
        ).json()
    prompt = chatfmt.render(ASK, QWEN, tools=[WEATHER_TOOL])
    assert plain["prompt"] == prompt and plain["prefill"] == ""
    assert tokenizer.decode(plain["token_ids"]) == prompt
    im_start = tokenizer.token_id("<|im_start|>")
    flagged = {t for t, c in zip(plain["token_ids"], plain["control"]) if c}
    assert im_start in flagged and not any(plain["trained"])
    assert forced["prefill"].startswith("<tool_call>")
    assert forced["prompt"] == prompt + forced["prefill"]
    assert tokenizer.decode(forced["token_ids"]) == forced["prompt"]
    assert forced["token_ids"][len(plain["token_ids"])] == tokenizer.token_id("<tool_call>")
    answer = [t for t, tr in zip(trained["token_ids"], trained["trained"]) if tr]
    assert tokenizer.decode(answer).startswith("Sunny.")


# ---------------------------------------------------------------------- embedded
@pytest.mark.slow
def test_embedded_model_through_the_sdk() -> None:
    """Chat completions (plain and streamed) and the Responses API over the embedded model."""
    pytest.importorskip("llama_cpp")
    from chatfmt.backends.llamacpp import LlamaCppBackend

    try:
        backend = LlamaCppBackend()
    except chatfmt.ChatFmtError as exc:
        pytest.skip(str(exc))
    entry = ModelEntry("smol", backend, chatfmt.get_template(backend.model_path))
    with (
        gateway(create_app({"smol": entry})) as base,
        openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0) as c,
    ):
        hi = [{"role": "user", "content": "Hi"}]
        reply = c.chat.completions.create(model="smol", messages=hi, max_tokens=8, seed=1)
        options = {"include_usage": True}
        stream = c.chat.completions.create(
            model="smol", messages=hi, max_tokens=8, stream=True, stream_options=options
        )
        chunks = list(stream)
        response = c.responses.create(model="smol", input="Hi", max_output_tokens=8)
    assert isinstance(reply.choices[0].message.content, str)
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens <= 8
    assert chunks[-1].usage is not None
    assert chunks[-2].choices[0].finish_reason in ("stop", "length")
    # the Responses API over the same model
    assert response.status in ("completed", "incomplete") and response.output_text
    if response.status == "incomplete":
        assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage.input_tokens > 0 and 0 < response.usage.output_tokens <= 8


# ---------------------------------------------------------------------- chatfmt serve
def test_serve_command_runs_the_gateway_from_a_config(
    engine: FakeCompletionsServer, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[models.assistant]\nbackend = "{engine.base_url}"\ntemplate = "qwen2.5"\n'
        'backend_api_key_env = "TEST_BACKEND_KEY"\n\n[limits]\nmax_messages = 10\n'
    )
    env = {"CHATFMT_API_KEY": KEY, "TEST_BACKEND_KEY": BACKEND_KEY}
    with chatfmt_serve("--config", str(config), env=env) as (base, proc):
        engine.replies.append("Served.<|im_end|>")
        with openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0) as c:
            reply = c.chat.completions.create(model="assistant", messages=ASK)
            assert [m.id for m in c.models.list()] == ["assistant"]
        assert reply.choices[0].message.content == "Served."
        assert httpx.get(base + "/v1/models").status_code == 401
    err = proc.stderr.read()
    assert BACKEND_KEY not in err.decode()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models.a]\nbackend = 3\n", "models.a.backend: must be a non-empty string"),
        ("[models.a]\nbackend_url = 'x'\n", "unknown key(s) backend_url"),
        ("[limits]\nmax_messages = 3\n", "no [models.NAME] table"),
        ("[models.a]\n[limits]\nmax_messages = 0\n", "limits.max_messages: must be a positive"),
        ("[models\n", "not valid TOML"),
    ],
)
def test_serve_config_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    from typer.testing import CliRunner

    from chatfmt.cli import app

    config = tmp_path / "bad.toml"
    config.write_text(text)
    result = CliRunner().invoke(app, ["serve", "--config", str(config)])
    assert result.exit_code == 2
    assert message in result.output and str(config) in result.output


def test_serve_takes_the_template_from_the_backends_model_id(fake: Any) -> None:
    from chatfmt.commands.serve import build_app
    from chatfmt.gateway.config import ModelSpec

    spec = ModelSpec(name="", backend=fake.base_url)
    fake.model_id = "Qwen/Qwen2.5-7B-Instruct"
    try:
        app = build_app([spec], Limits(), None)
        fake.model_id = "no-such-model"
        with pytest.raises(chatfmt.ChatFmtError, match=r"no-such-model.*--template"):
            build_app([spec], Limits(), None)
    finally:
        fake.model_id = "fake-model"
    assert app.state.model_names == ["qwen2.5"]  # unnamed: the template's name
