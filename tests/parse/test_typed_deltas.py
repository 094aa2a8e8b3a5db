"""Typed deltas and ParsedMessage, and their OpenAI wire shapes (``parsing.openai_wire``)."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from _streaming import call_ids, stream_deltas, wire
from chatfmt.parsing import (
    ContentDelta,
    ParsedMessage,
    ParsedToolCall,
    ReasoningDelta,
    StreamParser,
    ToolCallDelta,
    merge_deltas,
    parse,
)
from chatfmt.parsing.base import Emitter
from chatfmt.parsing.openai_wire import delta_dict, message_dict

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]


def test_stream_deltas_are_typed_and_frozen() -> None:
    deltas = stream_deltas(["<think>hm</think>Sure. ", CALL], "qwen3", id_factory=call_ids)
    assert deltas == [
        ReasoningDelta("hm"),
        ContentDelta("Sure."),
        ContentDelta(" "),  # trailing whitespace is held until what follows decides
        ToolCallDelta(0, '{"city": "Paris"}', "call_0", "get_weather"),
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        deltas[0].text = "changed"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(deltas)) == deltas


def test_wire_shapes_of_deltas() -> None:
    deltas = stream_deltas(["Sure. ", CALL[:40], CALL[40:]], "qwen2.5", id_factory=call_ids)
    assert wire(deltas) == [
        {"content": "Sure."},
        {"content": " "},  # held until what follows decides: not Qwen's separator, so content
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]},
    ]


def test_code_interpreter_call() -> None:
    text = "<|action_start|><|interpreter|>\nprint(1)\n<|action_end|>"
    msg = parse(text, "internlm2", id_factory=call_ids)
    assert msg.tool_calls == (ParsedToolCall("call_0", "code_interpreter", "print(1)", code=True),)
    assert msg["tool_calls"] == [
        {"id": "call_0", "type": "code_interpreter", "code_interpreter": {"input": "print(1)"}}
    ]
    first, *rest = stream_deltas(list(text), "internlm2", id_factory=call_ids)
    assert isinstance(first, ToolCallDelta) and (first.id, first.name, first.code) == (
        "call_0",
        "code_interpreter",
        True,
    )
    assert delta_dict(first) == {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_0",
                "type": "code_interpreter",
                "code_interpreter": {"input": ""},
            }
        ]
    }
    assert delta_dict(rest[0]) == {"tool_calls": [{"index": 0, "code_interpreter": {"input": "p"}}]}


def test_invalid_call_error_is_kept_or_left_out() -> None:
    text = '<tool_call>\n{"name": "get_weather", "arguments": [1]}\n</tool_call>'
    sp = StreamParser("qwen2.5", tools=WEATHER, id_factory=call_ids)
    deltas = sp.feed(text) + sp.finish()
    flag = ToolCallDelta(0, error="arguments are not a JSON object")
    assert deltas[-1] == flag
    assert delta_dict(flag) == {
        "tool_calls": [{"index": 0, "error": "arguments are not a JSON object"}]
    }
    assert delta_dict(flag, errors=False) is None  # nothing left to send
    msg = merge_deltas(deltas, finish_reason=sp.finish_reason)
    assert msg.tool_calls[0].error == "arguments are not a JSON object"
    assert msg["tool_calls"][0]["error"] == "arguments are not a JSON object"
    assert "error" not in message_dict(msg, errors=False)["tool_calls"][0]


def test_max_calls_drops_later_calls() -> None:
    text = CALL + CALL.replace("Paris", "Rome")
    deltas = stream_deltas([text], "qwen2.5", id_factory=call_ids)
    assert [d.index for d in deltas if isinstance(d, ToolCallDelta)] == [0, 1]
    assert [delta_dict(d, max_calls=1) is None for d in deltas] == [False, True]
    msg = merge_deltas(deltas)
    assert [c["id"] for c in message_dict(msg, max_calls=1)["tool_calls"]] == ["call_0"]


def test_parsed_message_fields_and_dict() -> None:
    msg = parse("<think>hm</think>Sure. " + CALL + "<|im_end|>x", "qwen3", id_factory=call_ids)
    assert (msg.content, msg.reasoning_content, msg.finish_reason, msg.trailing_text) == (
        "Sure. ",
        "hm",
        "tool_calls",
        "x",
    )
    assert msg.tool_calls == (ParsedToolCall("call_0", "get_weather", '{"city": "Paris"}'),)
    plain = msg.to_openai()
    assert type(plain) is dict and plain == msg and json.loads(json.dumps(msg)) == plain
    assert plain["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
    plain["content"] = "changed"  # a new dict: the message is untouched
    assert msg["content"] == "Sure. "
    for mutate in (lambda: msg.update(content="x"), lambda: msg.pop("content")):
        with pytest.raises(TypeError, match="read-only"):
            mutate()


def test_merge_deltas_finish_reason_defaults() -> None:
    assert merge_deltas([ContentDelta("a"), ContentDelta("b")]) == ParsedMessage("ab")
    assert merge_deltas([]).finish_reason == "stop"
    call = merge_deltas([ToolCallDelta(0, "{}", "c", "f")])
    assert (call.content, call.finish_reason) == (None, "tool_calls")
    with pytest.raises(TypeError):
        merge_deltas([{"content": "a dict"}])  # type: ignore[list-item]


def test_emitter_joins_neighbouring_text() -> None:
    out = Emitter(call_ids, None)
    out.content("a")
    out.content("b")
    out.reasoning("r")
    index = out.start_call("f")
    out.args(index, "{")
    out.args(index, "}")
    out.content("c")
    assert out.take() == [
        ContentDelta("ab"),
        ReasoningDelta("r"),
        ToolCallDelta(0, "{}", "call_0", "f"),
        ContentDelta("c"),
    ]
    assert out.take() == []


def test_in_answer_turns_true_once_the_reasoning_block_is_read() -> None:
    sp = StreamParser("qwen3")
    seen = []
    for piece in ["<think>hm", " still", "</think>", "\n\nSure."]:
        sp.feed(piece)
        seen.append(sp.in_answer)
    assert seen == [False, False, False, True]  # whitespace after the closer may still be markup
    assert StreamParser("hermes").in_answer  # no reasoning parser: all of it is the answer


def _whole(sp: StreamParser, text: str) -> ParsedMessage:
    return merge_deltas(sp.feed(text) + sp.finish())


def test_engine_switches_of_the_reasoning_reading() -> None:
    text = "<think>\nplan\n</think>\n\nAnswer"
    plain = StreamParser("qwen3")
    assert _whole(plain, text)["reasoning_content"] == "plan" and plain.reasoning_opened
    verbatim = StreamParser("qwen3")
    verbatim.keep_reasoning_whitespace()
    msg = _whole(verbatim, text)
    assert (msg["reasoning_content"], msg["content"]) == ("\nplan\n", "\n\nAnswer")
    assert not StreamParser("hermes").reasoning_opened

    draft = '<think>try <tool_call>{"name": "f", "arguments": {}}</tool_call> no</think>ok'
    assert not _whole(StreamParser("qwen3"), draft).get("tool_calls")  # a drafted call
    eager = StreamParser("qwen3")
    eager.end_reasoning_at_calls()
    assert _whole(eager, draft)["tool_calls"][0]["function"]["name"] == "f"
