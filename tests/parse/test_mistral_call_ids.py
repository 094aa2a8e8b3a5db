"""Mistral call ids: the parser keeps the id the model wrote, so the reply renders back as it.

Mistral v3 writes each call as ``{"name": …, "arguments": …, "id": …}``: the id comes after
the arguments. A call's first delta carries its id (every API's wire opens a call with it),
so the call's header and arguments are held until its id is read (or its object ends);
text and earlier calls are not.
"""

from __future__ import annotations

import pytest

import chatfmt
from _streaming import assert_stream_equals_whole, call_ids, stream_deltas
from chatfmt.parsing import ToolCallDelta

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
HISTORY = [{"role": "user", "content": "Weather in Quito and Lima?"}]
TWO = (
    ' Sure[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Quito"}, "id": "abcDEF123"},'
    ' {"name": "get_weather", "arguments": {"city": "Lima"}, "id": "XYZ987xyz"}]'
)


def _ids(msg: chatfmt.ParsedMessage) -> list[str]:
    return [call.id for call in msg.tool_calls]


def test_the_ids_the_model_wrote_are_kept_streamed_and_whole() -> None:
    msg = assert_stream_equals_whole(TWO, "mistral-v3", tools=TOOLS)
    assert _ids(msg) == ["abcDEF123", "XYZ987xyz"]
    assert [call.error for call in msg.tool_calls] == [None, None]
    # each call's first delta carries its id (no call opens without one)
    chars = [TWO[i : i + 1] for i in range(len(TWO))]
    firsts: dict[int, ToolCallDelta] = {}
    for delta in stream_deltas(chars, "mistral-v3", tools=TOOLS, id_factory=call_ids):
        if isinstance(delta, ToolCallDelta):
            firsts.setdefault(delta.index, delta)
    assert [firsts[i].id for i in sorted(firsts)] == ["abcDEF123", "XYZ987xyz"]


def test_the_parsed_reply_renders_back_as_the_model_wrote_it() -> None:
    prompt = chatfmt.render(HISTORY, "mistral-v3", tools=TOOLS)
    msg = chatfmt.parse(TWO, "mistral-v3", tools=TOOLS)
    again = chatfmt.render(
        [*HISTORY, msg.to_openai()], "mistral-v3", tools=TOOLS, add_generation_prompt=False
    )
    assert again.startswith(prompt + TWO)


@pytest.mark.parametrize(
    ("call", "kept"),
    [
        ('{"id": "abcDEF123", "name": "get_weather", "arguments": {}}', "abcDEF123"),
        ('{"name": "get_weather", "arguments": {}}', None),  # none written: one is made
        ('{"name": "get_weather", "arguments": {}, "id": "call_1"}', None),  # not Mistral's
        ('{"name": "get_weather", "arguments": {}, "id": 123456789}', None),  # not a string
    ],
)
def test_an_id_is_kept_only_where_mistral_accepts_it(call: str, kept: str | None) -> None:
    msg = assert_stream_equals_whole(f"[TOOL_CALLS] [{call}]", "mistral-v3", tools=TOOLS)
    assert _ids(msg) == [kept or call_ids(0)]
    assert msg.tool_calls[0].error is None


def test_a_call_cut_off_before_its_id_keeps_name_and_arguments() -> None:
    text = '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Qu'
    msg = assert_stream_equals_whole(text, "mistral-v3", tools=TOOLS)
    (call,) = msg.tool_calls
    assert (call.name, call.arguments, call.id) == ("get_weather", '{"city": "Qu', call_ids(0))
    assert call.error == "truncated"


def test_the_name_form_keeps_a_valid_call_id_only() -> None:
    good = assert_stream_equals_whole(
        '[TOOL_CALLS]get_weather[CALL_ID]abcDEF123[ARGS]{"city": "P"}', parser="mistral"
    )
    bad = assert_stream_equals_whole(
        '[TOOL_CALLS]get_weather[CALL_ID]call_1[ARGS]{"city": "P"}', parser="mistral"
    )
    assert (_ids(good), _ids(bad)) == (["abcDEF123"], [call_ids(0)])


def test_only_templates_that_write_ids_back_hold_a_call_for_its_id() -> None:
    """Devstral's template writes no call ids: its calls stream as they come; Mistral v3's
    hold a call until its id (or its object's end)."""
    head = '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Qu'

    def opened(template: str) -> list[ToolCallDelta]:
        sp = chatfmt.StreamParser(template, tools=TOOLS)
        return [d for d in sp.feed(head) if isinstance(d, ToolCallDelta)]

    assert [(d.name, d.text) for d in opened("devstral")] == [("get_weather", '{"city": "Qu')]
    assert opened("mistral-v3") == []
