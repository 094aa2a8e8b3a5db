"""``n`` > 1 on chat completions: ``n`` replies to one prompt, whole and streamed, through the
official ``openai`` SDK → gateway → fake engine (and once on the embedded SmolLM2)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")

import chatfmt  # noqa: E402
from _fake_server import FakeCompletionsServer, gateway  # noqa: E402
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402

QWEN = chatfmt.get_template("qwen2.5")
ASK = [{"role": "user", "content": "Say something."}]
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def call(name: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {{"city": "Paris"}}}}\n</tool_call>'


@pytest.fixture(scope="module")
def client(engine: FakeCompletionsServer) -> Iterator[Any]:
    entry = ModelEntry("qwen", OpenAICompletionsBackend(engine.base_url, model="m"), QWEN)
    with (
        gateway(create_app({"qwen": entry})) as base,
        openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=20) as c,
    ):
        yield c


def test_n_whole_replies_each_with_its_index_and_usage_summed(client: Any, fake: Any) -> None:
    replies = ["One.", "Two two.", "Three three three."]
    fake.replies.extend(replies)
    answer = client.chat.completions.create(model="qwen", messages=ASK, n=3, seed=7)
    assert [c.index for c in answer.choices] == [0, 1, 2]
    assert sorted(c.message.content for c in answer.choices) == sorted(replies)
    assert {c.finish_reason for c in answer.choices} == {"stop"}
    prompt = chatfmt.render(ASK, QWEN)
    assert [r["prompt"] for r in fake.requests] == [prompt] * 3
    assert sorted(r["seed"] for r in fake.requests) == [7, 8, 9]  # seed + i: choices differ
    # The prompt counted once (the fake counts characters), the completions summed.
    assert answer.usage.prompt_tokens == len(prompt)
    assert answer.usage.completion_tokens == sum(len(r) for r in replies)


def test_n_streamed_choices_interleave_and_each_ends_on_its_own(client: Any, fake: Any) -> None:
    replies = ["Alpha beta gamma.", "Delta epsilon."]
    fake.replies.extend(replies)
    chunks = list(
        client.chat.completions.create(
            model="qwen",
            messages=ASK,
            n=2,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    texts: dict[int, str] = defaultdict(str)
    finishes: dict[int, list[Any]] = defaultdict(list)
    roles = set()
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
            finishes[choice.index].append(choice.finish_reason)
            if choice.delta.role:
                roles.add(choice.index)
    assert sorted(texts.values()) == sorted(replies) and roles == {0, 1}
    for index in (0, 1):  # one finish per choice, at its end
        assert finishes[index][-1] == "stop" and set(finishes[index][:-1]) == {None}
    assert chunks[-1].usage is not None and not chunks[-1].choices
    assert chunks[-1].usage.completion_tokens == sum(len(r) for r in replies)
    assert "seed" not in fake.requests[0]  # no seed asked for: none invented
    assert len({c.id for c in chunks}) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_each_choice_is_checked_on_its_own(client: Any, fake: Any, stream: bool) -> None:
    fake.replies.extend([call("get_weather"), call("launch_rocket")])
    kwargs: dict[str, Any] = {"model": "qwen", "messages": ASK, "tools": [TOOL], "n": 2}
    if not stream:
        with pytest.raises(openai.InternalServerError) as err:
            client.chat.completions.create(**kwargs)
        message = err.value.body["message"]
    else:
        with pytest.raises(openai.APIError) as err:
            list(client.chat.completions.create(**kwargs, stream=True))
        message = err.value.message
    assert message.startswith("choice ") and "launch_rocket" in message


def test_n_valid_tool_calls_each_in_its_choice(client: Any, fake: Any) -> None:
    fake.replies.extend([call("get_weather"), call("get_weather")])
    answer = client.chat.completions.create(model="qwen", messages=ASK, tools=[TOOL], n=2)
    for choice in answer.choices:
        assert choice.finish_reason == "tool_calls"
        assert choice.message.tool_calls[0].function.name == "get_weather"
    ids = {c.message.tool_calls[0].id for c in answer.choices}
    assert len(ids) == 2


def test_n_streams_cut_midway_end_with_the_error_event(client: Any, fake: Any) -> None:
    fake.mode = "die"
    fake.replies.extend(["A long answer that the dying engine cuts in half."] * 2)
    received = ""
    with pytest.raises(openai.APIError) as err:
        for chunk in client.chat.completions.create(model="qwen", messages=ASK, n=2, stream=True):
            received += "".join(c.delta.content or "" for c in chunk.choices)
    assert received and "broke off" in err.value.message


def test_n_out_of_range_is_a_400(client: Any) -> None:
    for n in (0, 129):
        with pytest.raises(openai.BadRequestError) as err:
            client.chat.completions.create(model="qwen", messages=ASK, n=n)
        assert err.value.body["param"] == "n"


@pytest.mark.slow
def test_n_on_the_embedded_model() -> None:
    pytest.importorskip("llama_cpp")
    from chatfmt.backends.llamacpp import LlamaCppBackend

    try:
        backend = LlamaCppBackend()
    except chatfmt.ChatFmtError as exc:
        pytest.skip(str(exc))
    entry = ModelEntry("smol", backend, chatfmt.get_template(backend.model_path))
    hi = [{"role": "user", "content": "Hi"}]
    with (
        gateway(create_app({"smol": entry})) as base,
        openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0) as c,
    ):
        reply = c.chat.completions.create(model="smol", messages=hi, max_tokens=4, seed=1, n=2)
        chunks = list(
            c.chat.completions.create(model="smol", messages=hi, max_tokens=4, n=2, stream=True)
        )
    assert [ch.index for ch in reply.choices] == [0, 1]
    assert all(ch.finish_reason in ("stop", "length") for ch in reply.choices)
    assert reply.usage.completion_tokens <= 8
    ended = {ch.index for c in chunks for ch in c.choices if ch.finish_reason}
    assert ended == {0, 1}
