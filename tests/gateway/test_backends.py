"""Completion backends: the request model, the scripted backend, the OpenAI completions client."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from _fake_server import FakeCompletionsServer, serve
from chatfmt import get_template
from chatfmt.backends import (
    CompletionChunk,
    CompletionRequest,
    OpenAICompletionsBackend,
    ScriptedBackend,
    ScriptedReply,
    SyncBackend,
)
from chatfmt.errors import (
    BackendConnectionError,
    BackendError,
    BackendHTTPError,
    BackendProtocolError,
    ValidationError,
)

# --------------------------------------------------------------------------- the request


def test_request_defaults_come_from_the_template() -> None:
    tpl = get_template("internlm2")
    req = CompletionRequest.for_template(tpl, "PROMPT")
    gc = tpl.generation_config
    assert req.prompt == "PROMPT"
    assert req.stop == gc.all_stop_words
    assert "<|action_end|>" in req.stop and "<|im_end|>" in req.stop
    assert (req.temperature, req.top_p, req.top_k) == (gc.temperature, gc.top_p, gc.top_k)
    assert req.repetition_penalty == gc.repetition_penalty
    assert req.max_tokens is None and req.seed is None


def test_request_overrides_replace_defaults() -> None:
    req = CompletionRequest.for_template(
        get_template("qwen2.5"), "p", stop=["###"], temperature=0.0, max_tokens=7, seed=3
    )
    assert (req.stop, req.temperature, req.max_tokens, req.seed) == (("###",), 0.0, 7, 3)
    assert req.with_(max_tokens=9).max_tokens == 9


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"top_p": 1.5}, "top_p"),
        ({"temperature": -1}, "temperature"),
        ({"top_k": "5"}, "top_k"),
        ({"seed": True}, "seed"),
        ({"stop": "</s>"}, "stop"),
        ({"prompt": None}, "prompt"),
    ],
)
def test_request_rejects_bad_fields_by_name(changes: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        CompletionRequest("p").with_(**changes)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")


def test_request_rejects_unknown_override() -> None:
    with pytest.raises(ValidationError, match=r"unknown request field.*max_new_tokens"):
        CompletionRequest.for_template(get_template("qwen2.5"), "p", max_new_tokens=5)


def test_request_drops_empty_and_repeated_stop_words() -> None:
    assert CompletionRequest("p", stop=("a", "", "b", "a")).stop == ("a", "b")


# --------------------------------------------------------------------------- scripted


def _collect(backend: ScriptedBackend, request: CompletionRequest) -> list[CompletionChunk]:
    async def run() -> list[CompletionChunk]:
        return [c async for c in backend.stream(request)]

    return asyncio.run(run())


def test_scripted_backend_replays_records_and_honours_stop() -> None:
    backend = ScriptedBackend(["Hello<|im_end|>\nuser: more", ScriptedReply("cut", "length")])
    req = CompletionRequest("P1", stop=("<|im_end|>",))
    chunks = _collect(backend, req)
    assert "".join(c.text for c in chunks) == "Hello"
    assert [c.finish_reason for c in chunks] == [None] * (len(chunks) - 1) + ["stop"]
    result = asyncio.run(backend.complete(CompletionRequest("P2")))
    assert (result.text, result.finish_reason) == ("cut", "length")
    assert backend.prompts == ["P1", "P2"]
    assert backend.remaining == 0
    with pytest.raises(BackendError, match="no reply left for request 3"):
        asyncio.run(backend.complete(CompletionRequest("P3")))


def test_scripted_backend_can_return_the_stop_word() -> None:
    backend = ScriptedBackend(["Hi<|im_end|>junk"], include_stop=True)
    result = asyncio.run(backend.complete(CompletionRequest("p", stop=("<|im_end|>",))))
    assert result.text == "Hi<|im_end|>"


# --------------------------------------------------------------------------- OpenAI over HTTP


@pytest.fixture
def server() -> Iterator[FakeCompletionsServer]:
    with serve(FakeCompletionsServer()) as srv:
        yield srv


def _stream(backend: OpenAICompletionsBackend, request: CompletionRequest) -> list[CompletionChunk]:
    async def run() -> list[CompletionChunk]:
        async with backend:
            return [c async for c in backend.stream(request)]

    return asyncio.run(run())


def test_openai_stream_sends_the_request_and_reads_events(server: FakeCompletionsServer) -> None:
    server.replies = ["The weather is sunny.<|im_end|>\n<|im_start|>user"]
    server.chunk_delay = 0.005  # each event in its own read (else the reads may join them)
    req = CompletionRequest(
        "PROMPT", stop=("<|im_end|>",), max_tokens=100, temperature=0.5, top_k=40, seed=1
    )
    chunks = _stream(OpenAICompletionsBackend(server.base_url), req)
    assert "".join(c.text for c in chunks) == "The weather is sunny."
    assert len(chunks) > 2  # really streamed in pieces
    last = chunks[-1]
    assert last.finish_reason == "stop"
    assert last.usage is not None and last.usage.completion_tokens == len("The weather is sunny.")
    assert all(c.finish_reason is None for c in chunks[:-1])
    body = server.requests[0]
    assert body["model"] == "fake-model"  # from /v1/models
    assert body["prompt"] == "PROMPT" and body["stream"] is True
    assert body["stop"] == ["<|im_end|>"]
    assert (body["max_tokens"], body["temperature"], body["top_k"], body["seed"]) == (
        100,
        0.5,
        40,
        1,
    )
    assert "top_p" not in body  # None means the server's default


def test_openai_stream_hands_over_what_one_read_holds_as_one_chunk(
    server: FakeCompletionsServer,
) -> None:
    # a reader behind the engine gets several events in one read: one chunk of their text,
    # counting the events (≈ tokens) it joins; nothing lost, the finish still last
    server.one_write = True
    server.replies = ["The weather is sunny today."]
    chunks = _stream(OpenAICompletionsBackend(server.base_url), CompletionRequest("PROMPT"))
    text = "The weather is sunny today."
    assert [(c.text, c.events, c.finish_reason) for c in chunks] == [
        (text, len(range(0, len(text), server.chunk_size)), None),
        ("", 1, "stop"),
    ]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == len(text)


def test_openai_complete_and_length(server: FakeCompletionsServer) -> None:
    server.replies = ["abcdefghij"]
    backend = OpenAICompletionsBackend(server.base_url, model="m", extra_body={"ignore_eos": True})
    result = asyncio.run(backend.complete(CompletionRequest("p", max_tokens=4)))
    assert (result.text, result.finish_reason) == ("abcd", "length")
    assert result.usage is not None and result.usage.total_tokens == 1 + 4
    assert server.requests[0]["model"] == "m" and server.requests[0]["ignore_eos"] is True


def test_openai_one_pooled_session_for_concurrent_streams(server: FakeCompletionsServer) -> None:
    server.replies = [f"reply {i}" for i in range(20)]
    backend = OpenAICompletionsBackend(server.base_url, model="m")

    async def run() -> tuple[list[str], int]:
        async def one(i: int) -> str:
            return (await backend.complete(CompletionRequest(f"p{i}"))).text

        texts = await asyncio.gather(*(one(i) for i in range(20)))
        session = id(backend._session)
        await backend.complete(CompletionRequest("again"))
        same = id(backend._session) == session
        await backend.aclose()
        return sorted(texts), int(same)

    texts, same = asyncio.run(run())
    assert texts == sorted(f"reply {i}" for i in range(20))
    assert same == 1


def test_openai_http_error_is_clear(server: FakeCompletionsServer) -> None:
    server.mode = "http500"
    backend = OpenAICompletionsBackend(server.base_url, model="m")
    with pytest.raises(BackendHTTPError, match="HTTP 500: engine exploded") as err:
        _stream(backend, CompletionRequest("p"))
    assert err.value.status == 500


@pytest.mark.parametrize("stream", [True, False])
def test_openai_garbage_is_a_protocol_error(server: FakeCompletionsServer, stream: bool) -> None:
    server.mode = "garbage"
    backend = OpenAICompletionsBackend(server.base_url, model="m")
    with pytest.raises(BackendProtocolError, match="not JSON"):
        if stream:
            _stream(backend, CompletionRequest("p"))
        else:
            asyncio.run(backend.complete(CompletionRequest("p")))


def test_openai_stream_that_breaks_off_is_an_error(server: FakeCompletionsServer) -> None:
    server.mode = "cut"
    server.replies = ["some text"]
    with pytest.raises(BackendProtocolError, match="ended before a finish_reason"):
        _stream(OpenAICompletionsBackend(server.base_url, model="m"), CompletionRequest("p"))


def test_openai_read_timeout(server: FakeCompletionsServer) -> None:
    server.mode = "slow"
    backend = OpenAICompletionsBackend(server.base_url, model="m", read_timeout=0.3)
    with pytest.raises(BackendConnectionError, match=r"no data within 0\.3 s"):
        _stream(backend, CompletionRequest("p"))


def test_openai_read_timeout_bounds_each_wait_not_the_stream(
    server: FakeCompletionsServer,
) -> None:
    # the deadline is per wait for data: pauses shorter than it pass, however many there
    # are; one longer pause mid-stream ends the stream with the timeout error
    server.replies = ["abcdefghijklmnop"]
    server.chunk_size = 4
    server.chunk_delay = 0.1  # 4 pauses: longer than the timeout together
    backend = OpenAICompletionsBackend(server.base_url, model="m", read_timeout=0.3)
    chunks = _stream(backend, CompletionRequest("p"))
    assert "".join(c.text for c in chunks) == "abcdefghijklmnop"
    server.replies = ["abcdefghijklmnop"]
    server.chunk_delay = 1.0
    backend = OpenAICompletionsBackend(server.base_url, model="m", read_timeout=0.3)
    with pytest.raises(BackendConnectionError, match=r"no data within 0\.3 s"):
        _stream(backend, CompletionRequest("p"))


@pytest.mark.parametrize(
    ("call", "path"),
    [("lookup", "/models"), ("complete", "/completions"), ("stream", "/completions")],
)
def test_openai_unreachable_backend(call: str, path: str) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nobody listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = None if call == "lookup" else "m"  # no model: it is looked up at /models first
    backend = OpenAICompletionsBackend(
        f"http://127.0.0.1:{port}/v1", model=model, connect_timeout=2
    )
    url = f"http://127.0.0.1:{port}/v1{path}"
    with pytest.raises(BackendConnectionError, match=f"cannot reach {url}"):
        if call == "stream":
            _stream(backend, CompletionRequest("p"))
        else:
            asyncio.run(backend.complete(CompletionRequest("p")))


def test_openai_bad_url() -> None:
    with pytest.raises(BackendConnectionError, match="must start with http"):
        OpenAICompletionsBackend("localhost:8000/v1")


# --------------------------------------------------------------------------- sync wrapper


def test_sync_backend_complete_stream_and_early_exit(server: FakeCompletionsServer) -> None:
    server.replies = ["first reply", "second reply", "third"]
    with SyncBackend(OpenAICompletionsBackend(server.base_url, model="m")) as sync:
        assert sync.complete(CompletionRequest("a")).text == "first reply"
        chunks = list(sync.stream(CompletionRequest("b")))
        assert "".join(c.text for c in chunks) == "second reply"
        assert chunks[-1].finish_reason == "stop"
        for _chunk in sync.stream(CompletionRequest("c")):
            break  # leaving early stops the generation without hanging
    with pytest.raises(RuntimeError, match="closed"):
        sync.complete(CompletionRequest("d"))


def test_sync_backend_raises_backend_errors(server: FakeCompletionsServer) -> None:
    server.mode = "http500"
    with (
        SyncBackend(OpenAICompletionsBackend(server.base_url, model="m")) as sync,
        pytest.raises(BackendHTTPError) as err,
    ):
        list(sync.stream(CompletionRequest("p")))
    assert err.value.status == 500
    assert "engine exploded" in err.value.body


def test_openai_sends_token_ids_only_when_asked(server: FakeCompletionsServer) -> None:
    server.replies = ["a", "b"]
    req = CompletionRequest("TEXT", prompt_token_ids=(1, 2, 3))
    asyncio.run(OpenAICompletionsBackend(server.base_url, model="m").complete(req))
    asyncio.run(
        OpenAICompletionsBackend(server.base_url, model="m", send_token_ids=True).complete(req)
    )
    assert [r["prompt"] for r in server.requests] == ["TEXT", [1, 2, 3]]


def test_request_rejects_bad_token_ids() -> None:
    with pytest.raises(ValidationError, match="prompt_token_ids: must be a list of token ids"):
        CompletionRequest("p", prompt_token_ids=(1, -2))


def test_openai_model_is_looked_up_once_for_concurrent_first_requests(
    server: FakeCompletionsServer,
) -> None:
    server.replies = [f"r{i}" for i in range(10)]
    backend = OpenAICompletionsBackend(server.base_url)
    lookups: list[str] = []
    original = backend._get_json

    async def counting(path: str) -> object:
        lookups.append(path)
        return await original(path)

    backend._get_json = counting  # type: ignore[method-assign]

    async def run() -> list[str]:
        async with backend:
            results = await asyncio.gather(
                *(backend.complete(CompletionRequest(f"p{i}")) for i in range(10))
            )
        return [r.text for r in results]

    assert sorted(asyncio.run(run())) == sorted(f"r{i}" for i in range(10))
    assert lookups == ["/models"]
    assert all(r["model"] == "fake-model" for r in server.requests)


@pytest.mark.slow
def test_embedded_model_runs_a_lazy_grammar_from_its_trigger_on() -> None:
    """Free text until the trigger, then the strict grammar (which starts with the trigger):
    the embedded model writes what it likes up to 'Paris', then exactly the grammar."""
    pytest.importorskip("llama_cpp")
    from chatfmt.backends.llamacpp import LlamaCppBackend
    from chatfmt.constraints import Constraint
    from chatfmt.errors import ChatFmtError

    try:
        backend = LlamaCppBackend()
    except ChatFmtError as exc:
        pytest.skip(str(exc))
    tail = " is the capital of France, and that is final."
    constraint = Constraint("", f'root ::= "Paris" "{tail}"', "Paris", None, None, None)
    template = get_template("qwen2.5")
    prompt = template.render([{"role": "user", "content": "What is the capital of France?"}])

    async def run(seed: int) -> str:
        request = CompletionRequest.for_template(
            template, prompt, max_tokens=40, seed=seed, constraint=constraint
        )
        return "".join([c.text async for c in backend.stream(request)])

    texts = [asyncio.run(run(seed)) for seed in (2, 3)]
    for text in texts:
        assert text.endswith("Paris" + tail) and text.count("Paris") == 1
        assert not text.startswith("Paris")  # free text came first
