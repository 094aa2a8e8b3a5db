"""``/tokenize`` and ``/detokenize``, and each engine's tokenize endpoint behind them.

The engines are the fake completions server made to look like vLLM, SGLang, llama.cpp's
server and llama-cpp-python's (``kind`` configured), with a character tokenizer: each test
checks what the gateway answered and the request the engine was sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

import chatfmt  # noqa: E402
from _fake_server import FakeCompletionsServer, gateway, serve  # noqa: E402
from chatfmt.backends.openai import OpenAICompletionsBackend  # noqa: E402
from chatfmt.errors import UnsupportedFeatureError  # noqa: E402
from chatfmt.gateway import Limits, ModelEntry, create_app  # noqa: E402
from chatfmt.gateway.chat import prepare, prompt_tokens  # noqa: E402
from chatfmt.gateway.request import ChatRequest  # noqa: E402
from chatfmt.tokens import load_tokenizer  # noqa: E402

from _support import SHARED  # noqa: E402

QWEN = chatfmt.get_template("qwen2.5")
ASK = [{"role": "user", "content": "Hi"}]


def chars(text: str) -> list[int]:
    """The fake engine's tokenizer: one id per character."""
    return [ord(c) for c in text]


#: kind → (tokenize path, its body for text T, detokenize path, its answer's field)
ENGINES: dict[str, tuple[str, Any, str, str]] = {
    "vllm": ("/tokenize", lambda t: {"model": "fake-model", "prompt": t}, "/detokenize", "prompt"),
    "sglang": (
        "/tokenize",
        lambda t: {"model": "fake-model", "prompt": t},
        "/detokenize",
        "prompt",
    ),
    "llama.cpp": (
        "/tokenize",
        lambda t: {"content": t, "add_special": True, "parse_special": True},
        "/detokenize",
        "content",
    ),
    "llama-cpp-python": ("/extras/tokenize", lambda t: {"input": t}, "/extras/detokenize", "text"),
}


def text_of(body: dict[str, Any]) -> str:
    return str(body.get("prompt", body.get("content", body.get("input", ""))))


@pytest.fixture(scope="module")
def engine() -> Iterator[FakeCompletionsServer]:
    with serve(FakeCompletionsServer()) as running:
        yield running


@pytest.fixture(params=sorted(ENGINES))
def kind(request: pytest.FixtureRequest, engine: FakeCompletionsServer) -> Iterator[str]:
    tok_path, _, detok_path, field = ENGINES[request.param]
    engine.root_post = {
        tok_path: lambda body: {"tokens": chars(text_of(body))},
        detok_path: lambda body: {field: "".join(chr(i) for i in body["tokens"])},
    }
    engine.root_posts.clear()
    yield request.param
    engine.root_post = {}


def entry_for(engine: FakeCompletionsServer, kind: str, tokenizer: Any = None) -> ModelEntry:
    backend = OpenAICompletionsBackend(engine.base_url, kind=kind)
    return ModelEntry("qwen", backend, QWEN, tokenizer=tokenizer)


def test_each_engine_kind_is_asked_at_its_own_endpoint(
    engine: FakeCompletionsServer, kind: str
) -> None:
    tok_path, tok_body, detok_path, _ = ENGINES[kind]
    backend = OpenAICompletionsBackend(engine.base_url, kind=kind)

    async def run() -> tuple[list[int], str]:
        try:
            return await backend.tokenize("<|im_start|>hi"), await backend.detokenize([104, 105])
        finally:
            await backend.aclose()

    ids, text = asyncio.run(run())
    assert ids == chars("<|im_start|>hi") and text == "hi"
    assert engine.root_posts[0] == (tok_path, tok_body("<|im_start|>hi"))
    assert engine.root_posts[1][0] == detok_path and engine.root_posts[1][1]["tokens"] == [104, 105]


def test_gateway_tokenizes_prompts_and_rendered_chats_through_the_engine(
    engine: FakeCompletionsServer, kind: str
) -> None:
    entry = entry_for(engine, kind)
    rendered = chatfmt.render(ASK, QWEN)
    with gateway(create_app({"qwen": entry}, limits=Limits(max_prompt_tokens=4096))) as base:
        by_prompt = httpx.post(base + "/tokenize", json={"model": "qwen", "prompt": "abc"}).json()
        by_chat = httpx.post(base + "/tokenize", json={"model": "qwen", "messages": ASK}).json()
        back = httpx.post(base + "/detokenize", json={"model": "qwen", "tokens": chars("ok")})
    assert by_prompt == {"tokens": chars("abc"), "count": 3, "max_model_len": 4096}
    assert by_chat["tokens"] == chars(rendered) and by_chat["count"] == len(rendered)
    assert text_of(engine.root_posts[1][1]) == rendered  # the template's prompt was tokenized
    assert back.json() == {"prompt": "ok"}


def test_prompt_tokens_use_the_engine_without_a_tokenizer(
    engine: FakeCompletionsServer, kind: str
) -> None:
    entry = entry_for(engine, kind)
    prepared = prepare(entry, ChatRequest(model="qwen", messages=ASK), Limits())

    async def count() -> int:
        try:
            return await prompt_tokens(prepared)
        finally:
            await entry.backend.aclose()

    assert asyncio.run(count()) == len(prepared.prompt)


def test_a_known_tokenizer_answers_without_asking_the_engine(
    engine: FakeCompletionsServer,
) -> None:
    tokenizer = load_tokenizer(SHARED / "tokenizers" / "qwen3")
    entry = entry_for(engine, "vllm", tokenizer)
    engine.root_posts.clear()
    with gateway(create_app({"qwen": entry})) as base:
        chat = httpx.post(base + "/tokenize", json={"model": "qwen", "messages": ASK}).json()
        back = httpx.post(base + "/detokenize", json={"model": "qwen", "tokens": chat["tokens"]})
    assert tokenizer.decode(chat["tokens"]) == chatfmt.render(ASK, QWEN)
    assert chat["max_model_len"] == QWEN.generation_config.session_len
    assert back.json()["prompt"] == chatfmt.render(ASK, QWEN)
    assert engine.root_posts == []


def test_without_any_tokenizer_the_error_says_how_to_provide_one(
    engine: FakeCompletionsServer,
) -> None:
    entry = entry_for(engine, "generic")
    with gateway(create_app({"qwen": entry})) as base:
        answer = httpx.post(base + "/tokenize", json={"model": "qwen", "prompt": "abc"})
        both = httpx.post(
            base + "/tokenize", json={"model": "qwen", "prompt": "abc", "messages": ASK}
        )
        unknown = httpx.post(base + "/detokenize", json={"model": "nope", "tokens": [1]})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "tokenizer_unavailable" and "--tokenizer" in error["message"]
    assert (
        both.status_code == 400 and "either prompt or messages" in both.json()["error"]["message"]
    )
    assert unknown.status_code == 404

    backend = OpenAICompletionsBackend(engine.base_url, kind="generic")
    with pytest.raises(UnsupportedFeatureError, match="backend-kind"):
        asyncio.run(backend.tokenize("x"))


@pytest.mark.parametrize("stream", [False, True])
def test_usage_is_counted_by_the_engine_when_it_sends_none(
    engine: FakeCompletionsServer, stream: bool
) -> None:
    # llama-cpp-python's server sends no usage on streamed completions: the gateway asks its
    # tokenize endpoint, and a re-tokenized reply never counts more than max_tokens
    tok_path, _, _, _ = ENGINES["llama-cpp-python"]
    engine.root_post = {tok_path: lambda body: {"tokens": chars(text_of(body))}}
    engine.sends_usage = False
    engine.replies = ["Hello there!", "Hello there!"]
    entry = entry_for(engine, "llama-cpp-python")
    body: dict[str, Any] = {"model": "qwen", "messages": ASK, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    try:
        with gateway(create_app({"qwen": entry})) as base:
            usages = []
            for max_tokens in (None, 5):
                sent = {**body, **({"max_tokens": max_tokens} if max_tokens else {})}
                resp = httpx.post(base + "/v1/chat/completions", json=sent, timeout=30)
                if stream:
                    events = [line[6:] for line in resp.text.splitlines() if line[6:8] == '{"']
                    usages.append(json.loads(events[-1])["usage"])
                else:
                    usages.append(resp.json()["usage"])
    finally:
        engine.root_post, engine.sends_usage = {}, True
    prompt = len(chatfmt.render(ASK, QWEN))
    assert usages[0] == {
        "prompt_tokens": prompt,
        "completion_tokens": len("Hello there!"),
        "total_tokens": prompt + len("Hello there!"),
    }
    assert usages[1]["completion_tokens"] == 5  # the engine stopped at max_tokens


@pytest.mark.slow  # loads transformers' tokenizers
@pytest.mark.parametrize("name", ["qwen3", "llama3_1"])
def test_special_token_strings_in_a_prompt_are_the_special_tokens(
    engine: FakeCompletionsServer, name: str
) -> None:
    """vLLM's ``/tokenize`` encodes a prompt as its completions do: the tokenizer's own
    ``encode``, where a special token's text is that token (``<|im_end|>`` is one id, not
    ``<``, ``|``, …) and ``add_special_tokens`` (default true) adds what the tokenizer adds
    (Llama 3's BOS). The reference is transformers' own tokenizer of the same files."""
    transformers = pytest.importorskip("transformers")
    path = SHARED / "tokenizers" / name
    reference = transformers.AutoTokenizer.from_pretrained(str(path))
    text = {
        "qwen3": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
        "llama3_1": "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    }[name]
    entry = entry_for(engine, "vllm", load_tokenizer(path))
    engine.root_posts.clear()
    with gateway(create_app({"qwen": entry})) as base:
        for special in (True, False):
            got = httpx.post(
                base + "/tokenize",
                json={"model": "qwen", "prompt": text, "add_special_tokens": special},
            ).json()
            want = reference(text, add_special_tokens=special)["input_ids"]
            assert got["tokens"] == want and got["count"] == len(want)
            # every special-token string became its one id
            for token in [*reference.all_special_tokens, "<|im_end|>", "<|eot_id|>"]:
                tid = reference.convert_tokens_to_ids(token)
                if token in text and isinstance(tid, int):
                    assert got["tokens"].count(tid) == text.count(token)
    assert engine.root_posts == []  # the known tokenizer answered


@pytest.mark.parametrize("engine_kind", ["vllm", "sglang", "llama.cpp"])
@pytest.mark.parametrize("continuous", [True, False])
def test_messages_takes_the_prompt_count_from_the_stream_or_counts_beside_it(
    engine: FakeCompletionsServer, engine_kind: str, continuous: bool
) -> None:
    # /v1/messages needs the prompt's count for message_start. vLLM and SGLang send it with
    # the first chunk when asked (continuous usage): no request of its own. An engine that
    # ignores the option is asked its tokenize endpoint after the completion started. Other
    # engines: the first request counts before the completion is sent (a model that cannot
    # count is refused before generation); once the engine has counted, the completion
    # goes first.
    tok_path, _, _, _ = ENGINES[engine_kind]
    engine.root_post = {tok_path: lambda body: {"tokens": chars(text_of(body))}}
    engine.replies = ["Hello.", "Hello again."]
    engine.continuous_usage = continuous
    entry = entry_for(engine, engine_kind)
    backend = entry.backend
    assert isinstance(backend, OpenAICompletionsBackend)
    calls: list[str] = []
    tokenize, stream = backend.tokenize, backend._stream_one

    async def counted(text: str) -> list[int]:
        calls.append("tokenize")
        return await tokenize(text)

    def streamed(request: Any, emulate: bool = False) -> Any:
        calls.append("completion")
        return stream(request, emulate)

    backend.tokenize = counted  # type: ignore[method-assign]
    backend._stream_one = streamed  # type: ignore[method-assign]
    body = {"model": "qwen", "max_tokens": 50, "stream": True, "messages": ASK}
    prompt = len(chatfmt.render(ASK, QWEN))
    engine.requests.clear()
    try:
        with gateway(create_app({"qwen": entry})) as base:
            starts, ends = [], []
            for _ in range(2):
                resp = httpx.post(base + "/v1/messages", json=body, timeout=30)
                data = [
                    json.loads(line[6:]) for line in resp.text.splitlines() if line[:6] == "data: "
                ]
                starts.append(data[0]["message"]["usage"]["input_tokens"])
                ends.append(data[-2]["usage"]["output_tokens"])  # message_delta
    finally:
        engine.root_post = {}
        engine.continuous_usage = True
    assert starts == [prompt, prompt] and ends == [len("Hello."), len("Hello again.")]
    asked = [(r.get("stream_options") or {}).get("continuous_usage_stats") for r in engine.requests]
    if engine_kind == "llama.cpp":
        assert asked == [None, None]
        assert calls == ["tokenize", "completion", "completion", "tokenize"]
    else:
        assert asked == [True, True]
        in_stream = ["completion", "completion"]
        assert calls == in_stream if continuous else ["completion", "tokenize"] * 2
