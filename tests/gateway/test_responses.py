"""``POST /v1/responses`` over a scripted backend: the response object, the exact streamed
event sequence, items sent back as input, ``previous_response_id`` and the store, and the
400s for what is not served."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

import chatfmt  # noqa: E402
from _fake_server import StallingBackend, gateway  # noqa: E402
from chatfmt.backends import Backend, CompletionChunk, CompletionRequest  # noqa: E402
from chatfmt.backends.scripted import ScriptedBackend, ScriptedReply  # noqa: E402
from chatfmt.errors import BackendConnectionError  # noqa: E402
from chatfmt.gateway import Limits, ModelEntry, create_app  # noqa: E402
from chatfmt.gateway.response_store import ResponseStore, StoredResponse  # noqa: E402

QWEN = chatfmt.get_template("qwen2.5")
QWEN3 = chatfmt.get_template("qwen3")
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TWO_CALLS = CALL + "\n" + CALL.replace("Paris", "Rome")


class Server:
    """A gateway over a scripted backend (one model per template), and its client."""

    def __init__(self, base: str, backend: ScriptedBackend) -> None:
        self.base = base
        self.backend = backend

    def post(self, body: dict[str, Any], model: str = "qwen") -> httpx.Response:
        return httpx.post(self.base + "/v1/responses", json={"model": model, **body}, timeout=30)

    def create(self, body: dict[str, Any], model: str = "qwen") -> dict[str, Any]:
        answer = self.post(body, model)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def stream(self, body: dict[str, Any], model: str = "qwen") -> list[dict[str, Any]]:
        """The events of a streamed request (``event:`` names checked against ``type``)."""
        request = {"model": model, "stream": True, **body}
        with httpx.stream("POST", self.base + "/v1/responses", json=request, timeout=30) as r:
            assert r.status_code == 200, r.read()
            text = r.read().decode()
        events = []
        for block in text.strip().split("\n\n"):
            lines = dict(line.split(": ", 1) for line in block.splitlines())
            if lines["data"] == "[DONE]":
                continue
            event = json.loads(lines["data"])
            assert lines["event"] == event["type"]
            events.append(event)
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        return events

    def reply(self, *replies: str | ScriptedReply) -> None:
        self.backend._replies.extend(
            r if isinstance(r, ScriptedReply) else ScriptedReply(r, chunk_size=3) for r in replies
        )


@pytest.fixture(scope="module")
def running() -> Iterator[Server]:
    backend = ScriptedBackend([])
    models = {
        "qwen": ModelEntry("qwen", backend, QWEN),
        "qwen3": ModelEntry("qwen3", backend, QWEN3),
    }
    store = ResponseStore(max_entries=64)
    with gateway(create_app(models, response_store=store)) as base:
        yield Server(base, backend)


@pytest.fixture
def server(running: Server) -> Server:
    running.backend._replies.clear()
    running.backend._next = 0
    running.backend.requests.clear()
    return running


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


# ---------------------------------------------------------------------- the response object
def test_text_reply_is_a_message_item_with_usage_and_echoes(server: Server) -> None:
    server.reply("Hello there!")
    out = server.create(
        {"input": "Hi", "instructions": "Be brief.", "metadata": {"k": "v"}, "temperature": 0.2}
    )
    assert out["object"] == "response" and out["status"] == "completed"
    assert out["id"].startswith("resp_") and out["incomplete_details"] is None
    (item,) = out["output"]
    assert item["type"] == "message" and item["role"] == "assistant"
    assert item["content"] == [
        {"type": "output_text", "text": "Hello there!", "annotations": [], "logprobs": []}
    ]
    assert out["metadata"] == {"k": "v"} and out["instructions"] == "Be brief."
    assert out["temperature"] == 0.2 and out["store"] is True
    prompt = server.backend.prompts[-1]
    assert prompt.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi")
    usage = out["usage"]  # the scripted backend counts characters
    assert usage["input_tokens"] == len(prompt) and usage["output_tokens"] == len("Hello there!")
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert usage["output_tokens_details"] == {"reasoning_tokens": 0}
    assert server.backend.requests[-1].temperature == 0.2


def test_streamed_text_has_the_spec_event_sequence(server: Server) -> None:
    server.reply("Hello there!")
    events = server.stream({"input": "Hi"})
    assert types(events) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 4,  # 12 characters in chunks of 3
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[0]["response"]["status"] == "in_progress"
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "Hello there!"
    item_id = events[2]["item"]["id"]
    assert {e.get("item_id", item_id) for e in events[2:-1]} == {item_id}
    final = events[-1]["response"]
    assert final["status"] == "completed"
    assert final["output"] == [events[-2]["item"]]
    assert final["output"][0]["content"][0]["text"] == "Hello there!"


def test_streamed_call_arguments_come_as_the_model_writes_them(server: Server) -> None:
    server.reply(CALL)
    events = server.stream({"input": "Weather in Paris?", "tools": [TOOL]})
    kinds = types(events)
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-3:] == [
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    added = events[2]["item"]
    assert added["type"] == "function_call" and added["name"] == "get_weather"
    assert added["call_id"] and added["status"] == "in_progress"
    deltas = [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert len(deltas) > 1  # streamed, not buffered to the end
    assert json.loads("".join(deltas)) == {"city": "Paris"}
    assert events[-3]["arguments"] == "".join(deltas)
    done = events[-2]["item"]
    assert done["status"] == "completed" and done["call_id"] == added["call_id"]
    assert events[-1]["response"]["output"] == [done]


def test_reasoning_is_a_reasoning_item_streamed_with_reasoning_events(server: Server) -> None:
    server.reply("<think>Paris is in France.</think>\n\nSunny.")
    out = server.create({"input": "Weather?"}, model="qwen3")
    reasoning, message = out["output"]
    assert reasoning["type"] == "reasoning" and reasoning["summary"] == []
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "Paris is in France."}]
    assert message["content"][0]["text"] == "Sunny."
    server.reply("<think>Paris is in France.</think>\n\nSunny.")
    events = server.stream({"input": "Weather?"}, model="qwen3")
    kinds = types(events)
    assert "response.reasoning.delta" in kinds
    done = kinds.index("response.reasoning.done")
    assert kinds[done : done + 3] == [
        "response.reasoning.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert events[done]["text"] == "Paris is in France."
    assert events[-1]["response"]["output"][0]["content"] == reasoning["content"]


@pytest.mark.parametrize(
    ("effort", "switch"), [("none", False), ("minimal", False), ("high", True)]
)
def test_reasoning_effort_sets_the_templates_thinking_switch(
    server: Server, effort: str, switch: bool
) -> None:
    server.reply("Sunny.")
    out = server.create({"input": "Weather?", "reasoning": {"effort": effort}}, model="qwen3")
    assert out["reasoning"]["effort"] == effort
    empty_think = "<think>\n\n</think>" in server.backend.prompts[-1]
    assert empty_think is not switch


@pytest.mark.parametrize("stream", [False, True])
def test_output_limit_makes_an_incomplete_response(server: Server, stream: bool) -> None:
    server.reply(ScriptedReply("Once upon a", finish_reason="length"))
    body = {"input": "Tell a story.", "max_output_tokens": 3}
    if stream:
        events = server.stream(body)
        assert events[-1]["type"] == "response.incomplete"
        out = events[-1]["response"]
    else:
        out = server.create(body)
    assert out["status"] == "incomplete"
    assert out["incomplete_details"] == {"reason": "max_output_tokens"}
    assert out["output"][0]["status"] == "incomplete"
    assert server.backend.requests[-1].max_tokens == 3


# ---------------------------------------------------------------------- items back as input
def test_a_reply_sent_back_as_input_renders_to_what_the_model_wrote(server: Server) -> None:
    server.reply("Let me check.\n" + CALL, "Sunny in Paris.")
    ask = {"type": "message", "role": "user", "content": "Weather in Paris?"}
    first = server.create({"input": [ask], "tools": [TOOL], "store": False})
    message, call = first["output"]
    assert message["content"][0]["text"].startswith("Let me check.")
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"city": "Paris"}
    result = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    second = server.create({"input": [ask, *first["output"], result], "tools": [TOOL]})
    assert second["output"][0]["content"][0]["text"] == "Sunny in Paris."
    before, after = server.backend.prompts[-2:]
    assert after.startswith(before + "Let me check.\n" + CALL + "<|im_end|>")
    assert "<tool_response>\nsunny\n</tool_response>" in after


def test_previous_response_id_continues_the_stored_conversation(server: Server) -> None:
    server.reply(CALL, "Sunny in Paris.", CALL, "Sunny in Paris.")
    first = server.create({"input": "Weather in Paris?", "tools": [TOOL]})
    (call,) = first["output"]
    result = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    second = server.create(
        {"previous_response_id": first["id"], "input": [result], "tools": [TOOL]}
    )
    assert second["previous_response_id"] == first["id"]
    assert second["output"][0]["content"][0]["text"] == "Sunny in Paris."
    chained = server.backend.prompts[-1]
    # the same conversation sent whole renders the same prompt
    again = server.create({"input": "Weather in Paris?", "tools": [TOOL], "store": False})
    result["call_id"] = again["output"][0]["call_id"]
    ask = {"role": "user", "content": "Weather in Paris?"}
    server.create({"input": [ask, *again["output"], result], "tools": [TOOL]})
    assert server.backend.prompts[-1] == chained.replace(call["call_id"], result["call_id"])


def test_stored_responses_can_be_read_and_deleted_but_not_with_store_false(
    server: Server,
) -> None:
    server.reply("One.", "Two.")
    kept = server.create({"input": "Say one."})
    got = httpx.get(f"{server.base}/v1/responses/{kept['id']}").json()
    assert got == kept
    gone = httpx.delete(f"{server.base}/v1/responses/{kept['id']}").json()
    assert gone == {"id": kept["id"], "object": "response", "deleted": True}
    assert httpx.get(f"{server.base}/v1/responses/{kept['id']}").status_code == 404
    unstored = server.create({"input": "Say two.", "store": False})
    assert unstored["store"] is False
    missing = server.post({"previous_response_id": unstored["id"], "input": "And?"})
    assert missing.status_code == 400
    error = missing.json()["error"]
    assert error["code"] == "previous_response_not_found"
    assert error["param"] == "previous_response_id"


def test_the_store_is_bounded_and_entries_expire() -> None:
    now = [0.0]
    store = ResponseStore(max_entries=2, ttl=10.0, clock=lambda: now[0])
    first = StoredResponse({"id": "a"}, ({"role": "user", "content": "1"},))
    store.put("a", first)
    store.put("b", StoredResponse({"id": "b"}, ({"role": "user", "content": "2"},), first))
    assert store.get("b") is not None
    assert store.get("b").conversation() == [  # type: ignore[union-attr]
        {"role": "user", "content": "1"},
        {"role": "user", "content": "2"},
    ]
    store.put("c", StoredResponse({"id": "c"}, ()))
    assert store.get("a") is None and len(store) == 2  # the oldest went first
    now[0] = 10.0
    assert store.get("b") is None and len(store) == 0  # expired


# ---------------------------------------------------------------------- tools and formats
def test_parallel_tool_calls_false_keeps_the_first_call(server: Server) -> None:
    server.reply(TWO_CALLS, TWO_CALLS)
    out = server.create({"input": "Paris and Rome?", "tools": [TOOL]})
    assert len(out["output"]) == 2
    single = server.create(
        {"input": "Paris and Rome?", "tools": [TOOL], "parallel_tool_calls": False}
    )
    assert [i["type"] for i in single["output"]] == ["function_call"]
    assert single["parallel_tool_calls"] is False


REQUIRED = '<tool_call>\n{"name": "'
NAMED = REQUIRED + 'get_weather", "arguments": '
ALLOWED = {
    "type": "allowed_tools",
    "mode": "required",
    "tools": [{"type": "function", "name": "get_weather"}],
}


@pytest.mark.parametrize(
    ("choice", "prefill"),
    [
        ("required", REQUIRED),
        ({"type": "function", "name": "get_weather"}, NAMED),
        (ALLOWED, REQUIRED),
    ],
)
def test_tool_choice_forces_a_call(server: Server, choice: Any, prefill: str) -> None:
    rest = (CALL + "<|im_end|>")[len(prefill) :]
    server.reply(rest)
    out = server.create({"input": "Weather?", "tools": [TOOL], "tool_choice": choice})
    assert out["output"][0]["name"] == "get_weather"
    assert json.loads(out["output"][0]["arguments"]) == {"city": "Paris"}
    assert server.backend.prompts[-1].endswith(prefill)  # the forced opening
    assert out["tool_choice"] == choice


def test_text_format_json_schema_constrains_and_checks_the_reply(server: Server) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    fmt = {"type": "json_schema", "name": "city", "schema": schema, "strict": True}
    server.reply('{"city": "Paris"}', "not json at all")
    out = server.create({"input": "A city?", "text": {"format": fmt}})
    assert json.loads(out["output"][0]["content"][0]["text"]) == {"city": "Paris"}
    assert out["text"]["format"] == fmt
    assert server.backend.requests[-1].constraint is not None
    bad = server.post({"input": "A city?", "text": {"format": fmt}})
    assert bad.status_code == 500
    assert bad.json()["error"]["code"] == "invalid_model_output"


def test_an_invalid_streamed_reply_ends_with_error_and_failed(server: Server) -> None:
    server.reply("not json at all")
    events = server.stream({"input": "JSON?", "text": {"format": {"type": "json_object"}}})
    assert types(events)[-2:] == ["error", "response.failed"]
    error = events[-2]
    assert error["code"] == "invalid_model_output" and error["error"]["message"] == error["message"]
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "invalid_model_output"


class DyingBackend(Backend):
    """Writes a little, then the engine goes away."""

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        yield CompletionChunk("Hel")
        raise BackendConnectionError("the engine went away")


def test_a_backend_failure_mid_stream_ends_with_error_and_failed() -> None:
    entry = ModelEntry("dying", DyingBackend(), QWEN)
    with gateway(create_app({"dying": entry})) as base:
        body = {"model": "dying", "input": "Hi", "stream": True}
        with httpx.stream("POST", base + "/v1/responses", json=body, timeout=30) as r:
            text = r.read().decode()
    names = [line[len("event: ") :] for line in text.splitlines() if line.startswith("event: ")]
    assert names[-2:] == ["error", "response.failed"]
    assert "the engine went away" in text
    assert "[DONE]" not in text


# ---------------------------------------------------------------------- what is refused
@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0]", "hosted tools"),
        (
            {
                "input": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "What is this?"},
                            {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
                        ],
                    }
                ]
            },
            "input[0].content[1]",
            "images are not supported",
        ),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type", "item_reference"),
        ({"input": "x", "background": True}, "background", "background mode"),
        ({"input": "x", "conversation": "conv_1"}, "conversation", "previous_response_id"),
        ({"input": "x", "tool_choice": {"type": "file_search"}}, "tool_choice", "file_search"),
        ({}, "input", "input is required"),
        ({"input": [{"role": "user", "content": 5}]}, "input[0].content", "must be a string"),
        ({"input": "x", "tools": [{"type": "function"}]}, "tools[0].name", "required"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c1", "output": "x"}]},
            "input[0].role",  # the item as the message it is
            "tool result",
        ),
    ],
)
def test_what_is_not_served_is_a_400_naming_the_field(
    server: Server, body: dict[str, Any], param: str, words: str
) -> None:
    answer = server.post(body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param, error
    assert words in error["message"]
    assert "messages[" not in error["message"]


class CountingEngine(Backend):
    """An engine that reports no usage but has a tokenize endpoint (one token a word)."""

    def __init__(self, reply: str, tokenize: bool) -> None:
        self.reply = reply
        self.can_tokenize = tokenize

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        yield CompletionChunk(self.reply, "stop")

    async def tokenize(self, text: str) -> list[int]:
        if not self.can_tokenize:
            return await super().tokenize(text)
        return list(range(len(text.split())))


@pytest.mark.parametrize("tokenize", [True, False])
def test_usage_without_backend_counts_comes_from_the_tokenize_endpoint(tokenize: bool) -> None:
    reply = "<think>Two words.</think>\n\nThree more words."
    entry = ModelEntry("q", CountingEngine(reply, tokenize), QWEN3)
    with gateway(create_app({"q": entry})) as base:
        out = httpx.post(base + "/v1/responses", json={"model": "q", "input": "Hi"}).json()
    assert out["status"] == "completed"
    if not tokenize:  # never a guess
        assert out["usage"] is None
        return
    usage = out["usage"]
    prompt = chatfmt.render([{"role": "user", "content": "Hi"}], QWEN3)
    assert usage["input_tokens"] == len(prompt.split())
    assert usage["output_tokens"] == len(reply.split())
    assert usage["output_tokens_details"]["reasoning_tokens"] == 2


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": []}, "input"),
        (
            {
                "instructions": "Be brief.",
                "input": [
                    {"role": "user", "content": "Hi"},
                    {"type": "function_call_output", "call_id": "c9", "output": "x"},
                ],
            },
            "input[1].role",  # messages[2], after the instructions
        ),
        (
            {
                "input": "x",
                "text": {
                    "format": {"type": "json_schema", "name": "n", "schema": {"type": "bogus"}}
                },
            },
            "text.format.schema",
        ),
        (
            {"input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"type": 3}}]},
            "tools[0].parameters",
        ),
    ],
)
def test_pipeline_errors_name_the_responses_fields(
    server: Server, body: dict[str, Any], param: str
) -> None:
    answer = server.post(body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param, error
    assert "messages" not in error["message"] and "response_format" not in error["message"]


def test_a_reasoning_item_alone_is_an_assistant_turn(server: Server) -> None:
    server.reply("Fine.")
    thought = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Hmm."}]}
    ask = [{"role": "user", "content": "a"}, thought, {"role": "user", "content": "b"}]
    out = server.create({"input": ask}, model="qwen3")
    assert out["output"][0]["content"][0]["text"] == "Fine."
    assert "<|im_start|>assistant\n" in server.backend.prompts[-1].split("b<|im_end|>")[0]


def test_the_store_size_and_ttl_are_limits() -> None:
    backend = ScriptedBackend(["One.", "Two."])
    limits = Limits(stored_responses=1, stored_response_ttl=60)
    with gateway(create_app({"q": ModelEntry("q", backend, QWEN)}, limits=limits)) as base:
        ids = [
            httpx.post(base + "/v1/responses", json={"model": "q", "input": "Say it."}).json()["id"]
            for _ in range(2)
        ]
        found = [httpx.get(f"{base}/v1/responses/{i}").status_code for i in ids]
    assert found == [404, 200]  # one kept: the newest


def test_instructions_and_system_items_join_for_a_template_with_one_system_message() -> None:
    body = {
        "model": "m",
        "instructions": "Be brief.",
        "input": [
            {"role": "developer", "content": "Use metric units."},
            {"role": "user", "content": "Hi"},
        ],
    }
    prompts = {}
    for name in ("gpt-oss", "qwen2.5"):
        backend = ScriptedBackend(["Hello."])
        with gateway(
            create_app({"m": ModelEntry("m", backend, chatfmt.get_template(name))})
        ) as base:
            answer = httpx.post(base + "/v1/responses", json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        prompts[name] = backend.prompts[-1]
    assert "Be brief.\n\nUse metric units." in prompts["gpt-oss"]  # one developer message
    assert "Be brief.<|im_end|>\n<|im_start|>system\nUse metric units." in prompts["qwen2.5"]


def test_a_client_that_leaves_mid_stream_closes_the_backend_stream() -> None:
    engine = StallingBackend()
    with gateway(create_app({"m": ModelEntry("m", engine, QWEN)})) as base:
        body = {"model": "m", "input": "Hi", "stream": True}
        with httpx.stream("POST", base + "/v1/responses", json=body, timeout=30) as r:
            lines = r.iter_lines()  # kept: a dropped line iterator closes the response
            assert next(lines) == "event: response.created"
            assert not engine.closed.is_set()
        assert engine.closed.wait(timeout=10)
