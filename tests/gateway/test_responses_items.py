"""Output items ≡ the chat message: for every template with a tool-call format, the items
:class:`~chatfmt.gateway.responses_items.OutputItems` builds from the parser's deltas (at
several chunkings), read back as input, are the assistant message chat completions returns
for the same reply — which the chat pipeline renders back to what the model wrote."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pydantic")

import chatfmt
from _streaming import stream_deltas
from _tool_roundtrip import TOOLS, model_output
from chatfmt.gateway.responses_input import reply_messages
from chatfmt.gateway.responses_items import OutputItems
from chatfmt.parsing import Delta, merge_deltas
from chatfmt.parsing.openai_wire import message_dict

TEMPLATES = [t.name for t in chatfmt.list_templates() if t.supports_tools]


def items_of(deltas: list[Delta], max_calls: int | None = None) -> list[dict[str, Any]]:
    output = OutputItems(max_calls)
    events = [e for d in deltas for e in output.feed(d)] + output.close()
    added = [e["item"]["id"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert added == [item["id"] for item in done] == [item["id"] for item in output.items]
    return output.items


def chat_message(deltas: list[Delta], max_calls: int | None = None) -> dict[str, Any]:
    message = message_dict(merge_deltas(deltas), errors=False, max_calls=max_calls)
    for call in message.get("tool_calls", ()):
        call.pop("error", None)
    return message


@pytest.mark.parametrize("name", TEMPLATES)
def test_reply_items_read_back_are_the_chat_message(name: str) -> None:
    template = chatfmt.get_template(name)
    output = model_output(template, 2)
    if output is None:
        pytest.skip(f"{name} does not render the probe's calls")
    for chunks in ([output], [output[i : i + 1] for i in range(len(output))]):
        deltas = stream_deltas(chunks, template, tools=TOOLS)
        for max_calls in (None, 1):
            expected = chat_message(deltas, max_calls)
            (got,) = reply_messages(items_of(deltas, max_calls))
            if expected["content"] is None and "tool_calls" not in expected:
                expected["content"] = ""  # nothing written: an empty message
            assert got == expected


@pytest.mark.parametrize(
    "reply",
    [
        "<think>Paris is in France.</think>\n\nSunny.",
        "<think>Check.</think>\n\n"
        + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Quito", "days": 3}}\n</tool_call>',
        "  \n",
    ],
)
def test_reasoning_and_whitespace_read_back_are_the_chat_message(reply: str) -> None:
    template = chatfmt.get_template("qwen3")
    for chunks in ([reply], [reply[i : i + 1] for i in range(len(reply))]):
        deltas = stream_deltas(chunks, template, tools=TOOLS)
        (got,) = reply_messages(items_of(deltas))
        assert got == chat_message(deltas)


def test_events_are_written_as_the_json_they_are() -> None:
    from chatfmt.gateway.responses import _sse

    delta = 'a "quoted" line\n\ttab \\ back, é ✓ \x01'
    event = {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "delta": delta,
        "logprobs": [],
    }
    nested = {"type": "response.created", "response": {"output": [], "id": "resp_1"}}
    for sent in (event, nested):
        head, data = _sse(dict(sent)).decode().rstrip("\n").split("\n")
        assert head == f"event: {sent['type']}" and json.loads(data[len("data: ") :]) == sent
