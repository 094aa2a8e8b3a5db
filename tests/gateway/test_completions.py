"""``POST /v1/completions`` passed through to the model's backend: the ``openai`` SDK's
``completions`` API, and ``chatfmt chat --backend`` pointed at a running gateway."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

import chatfmt  # noqa: E402
from _fake_server import FakeCompletionsServer, gateway  # noqa: E402
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402

NAME = "Qwen2.5-7B-Instruct"  # a served name a client can find the template from


class Characters:
    """A stand-in tokenizer: one id per character."""

    def decode(self, ids: list[int]) -> str:
        return "".join(map(chr, ids))


@pytest.fixture(scope="module")
def base(engine: FakeCompletionsServer) -> Iterator[str]:
    backend = OpenAICompletionsBackend(engine.base_url, model="m")
    entry = ModelEntry(NAME, backend, chatfmt.get_template("qwen2.5"))
    with gateway(create_app({NAME: entry})) as url:
        yield url


@pytest.fixture
def client(base: str) -> Iterator[Any]:
    with openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=20) as c:
        yield c


def test_a_prompt_is_passed_through_as_it_is(client: Any, fake: Any) -> None:
    fake.replies.append("Paris. And more###cut")
    answer = client.completions.create(
        model=NAME, prompt="Q: capital of France?\nA:", stop="###", temperature=0, seed=3
    )
    sent = fake.requests[0]
    assert sent["prompt"] == "Q: capital of France?\nA:"
    assert sent["stop"] == ["###"]  # the request's stop words only: no template here
    assert sent["max_tokens"] == 16  # OpenAI's default
    assert (sent["temperature"], sent["seed"]) == (0, 3)
    choice = answer.choices[0]
    assert (choice.index, choice.finish_reason, choice.text) == (0, "stop", "Paris. And more")
    assert answer.object == "text_completion" and answer.model == NAME
    assert answer.usage.prompt_tokens == len(sent["prompt"])


def test_streamed_with_usage(client: Any, fake: Any) -> None:
    fake.replies.append("one two three")
    events = list(
        client.completions.create(
            model=NAME,
            prompt="count:",
            max_tokens=50,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(e.choices[0].text for e in events if e.choices)
    assert text == "one two three"
    finishes = [e.choices[0].finish_reason for e in events if e.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert events[-1].usage.completion_tokens == len(text)


@pytest.mark.parametrize("stream", [False, True])
def test_n_samples_of_several_prompts_are_indexed_prompt_by_prompt(
    client: Any, fake: Any, stream: bool
) -> None:
    fake.replies.extend(["a", "b", "c", "d"])
    kwargs: dict[str, Any] = {"model": NAME, "prompt": ["first", "second"], "n": 2, "seed": 5}
    texts: dict[int, str] = defaultdict(str)
    if stream:
        for event in client.completions.create(**kwargs, stream=True):
            for choice in event.choices:
                texts[choice.index] += choice.text
    else:
        answer = client.completions.create(**kwargs)
        texts.update({c.index: c.text for c in answer.choices})
        # each prompt counted once, every sample's completion summed
        assert answer.usage.prompt_tokens == len("first") + len("second")
        assert answer.usage.completion_tokens == 4
    assert sorted(texts) == [0, 1, 2, 3] and sorted(texts.values()) == ["a", "b", "c", "d"]
    by_prompt = defaultdict(list)
    for sent in fake.requests:
        by_prompt[sent["prompt"]].append(sent["seed"])
    assert {p: sorted(s) for p, s in by_prompt.items()} == {"first": [5, 6], "second": [5, 6]}


@pytest.mark.parametrize("stream", [False, True])
def test_echo_puts_the_prompt_first(client: Any, fake: Any, stream: bool) -> None:
    fake.replies.append(" world")
    if stream:
        events = client.completions.create(model=NAME, prompt="hello", echo=True, stream=True)
        text = "".join(e.choices[0].text for e in events if e.choices)
    else:
        text = client.completions.create(model=NAME, prompt="hello", echo=True).choices[0].text
    assert text == "hello world"


def test_token_ids_need_a_tokenizer(client: Any, fake: Any, engine: Any) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client.completions.create(model=NAME, prompt=[1, 2, 3])
    assert err.value.body["code"] == "tokenizer_unavailable" and not fake.requests
    backend = OpenAICompletionsBackend(engine.base_url, model="m")
    entry = ModelEntry("t", backend, chatfmt.get_template("qwen2.5"), Characters())
    ids = [ord(c) for c in "Hello there"]
    fake.replies.append("!")
    with gateway(create_app({"t": entry})) as url:
        answer = httpx.post(url + "/v1/completions", json={"model": "t", "prompt": ids}).json()
    assert answer["choices"][0]["text"] == "!"
    assert fake.requests[0]["prompt"] == "Hello there"  # decoded for an engine that takes text
    assert answer["usage"]["prompt_tokens"] == len("Hello there")  # the engine's count


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"logprobs": 2}, "logprobs"),
        ({"suffix": "end"}, "suffix"),
        ({"best_of": 3}, "best_of"),
        ({"presence_penalty": 0.5}, "presence_penalty"),
        ({"grammar": "root ::= [a-z]+"}, "grammar"),
        ({"prompt": []}, "prompt"),
        ({"n": 0}, "n"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_what_is_not_passed_on_is_refused(base: str, fake: Any, extra: Any, param: str) -> None:
    body = {"model": NAME, "prompt": "x", **extra}
    resp = httpx.post(base + "/v1/completions", json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["param"] == param
    assert not fake.requests


def test_unknown_model_and_backend_failure(base: str, fake: Any) -> None:
    resp = httpx.post(base + "/v1/completions", json={"model": "nope", "prompt": "x"})
    assert resp.status_code == 404
    fake.mode = "http500"
    for stream in (False, True):
        body = {"model": NAME, "prompt": "x", "stream": stream}
        resp = httpx.post(base + "/v1/completions", json=body)
        assert resp.status_code == 502 and resp.json()["error"]["code"] == "backend_error"
    fake.mode = "die"
    fake.replies.append("a reply long enough to be cut off midway")
    body = {"model": NAME, "prompt": "x", "stream": True, "max_tokens": 100}
    resp = httpx.post(base + "/v1/completions", json=body, timeout=20)
    events = [line[6:] for line in resp.text.splitlines() if line.startswith("data: ")]
    assert "error" in json.loads(events[-1])  # the error event ends the stream


@pytest.mark.slow
def test_chatfmt_chat_runs_against_a_running_gateway(
    base: str, fake: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """``chatfmt chat --backend <gateway>/v1``: the agent renders, the gateway passes the
    prompt to the engine; the template is found from the gateway's model name."""
    from typer.testing import CliRunner

    from chatfmt.cli import app

    tools = 'def get_weather(city: str) -> dict:\n    """The weather.\n\n    Args:\n        city: The city.\n    """\n    return {"city": city, "temperature": 21}\n'
    (tmp_path / "weather_tools.py").write_text(tools, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    fake.replies.extend(
        [
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
            "It is 21 degrees in Oslo.<|im_end|>",
        ]
    )
    args = ["chat", "--backend", base + "/v1", "--tool", "weather_tools:get_weather"]
    res = CliRunner().invoke(app, [*args, "-m", "Oslo?", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["answer"] == "It is 21 degrees in Oslo."
    assert [r["stream"] for r in fake.requests] == [True, True]
    assert '{"city": "Oslo", "temperature": 21}' in fake.requests[1]["prompt"]
    assert fake.requests[1]["prompt"].startswith("<|im_start|>system")
