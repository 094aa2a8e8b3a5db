"""Family parser edge cases: whitespace around calls in the stream, SmolLM3's Hermes calls,
Granite 3 thinking, GLM-4.5 output cut inside a tag, and a prefilled ``<think>`` written again.
Every case is checked whole and streamed in every chunking (``_streaming.chunkings``: every
single cut of short outputs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _streaming import assert_stream_equals_whole, chunkings, sent_text, stream_deltas, wire
from chatfmt.parsing import StreamParser, merge_deltas, parse

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    },
}


def arguments(msg: dict[str, Any]) -> list[tuple[str, Any, str | None]]:
    """(name, decoded arguments, error) of each call."""
    out = []
    for call in msg.get("tool_calls", []):
        fn = call["function"]
        try:
            args = json.loads(fn["arguments"])
        except ValueError:
            args = fn["arguments"]
        out.append((fn["name"], args, call.get("error")))
    return out


# ------------------------------------------------------------ stream ≡ whole, delta by delta
GLM45_CALLS = (
    "\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    "\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>"
)


@pytest.mark.parametrize(
    ("template", "text", "options"),
    [
        # GLM-4.5 with enable_thinking=False: the prompt ends "<think></think>", output starts "\n"
        ("glm4.5", GLM45_CALLS, {"enable_thinking": False}),
        ("glm4.5", "\n<think></think>" + GLM45_CALLS, {}),
        (
            "qwen2.5",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "P"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "R"}}\n</tool_call>\n',
            {},
        ),
    ],
)
def test_whitespace_around_calls_is_never_sent_as_content(
    template: str, text: str, options: dict[str, Any]
) -> None:
    """The whole parse has no content; no chunking may send a whitespace content delta."""
    msg = assert_stream_equals_whole(text, template, tools=[WEATHER], **options)
    assert msg["content"] is None
    assert [a[:2] for a in arguments(msg)] == [
        ("get_weather", {"city": c}) for c in (("Paris", "Rome") if "Paris" in text else "PR")
    ]
    for chunks in chunkings(text):
        deltas = stream_deltas(chunks, template, tools=[WEATHER], **options)
        assert not any("content" in d for d in wire(deltas)), (chunks, deltas)


def test_whitespace_is_content_when_text_follows_or_no_call_comes() -> None:
    for text, content in (("\n\n", "\n\n"), ("\n<tool_call>{}</tool_call>x", "\nx")):
        msg = assert_stream_equals_whole(text, "qwen2.5")
        assert msg["content"] == content
        assert sent_text(stream_deltas([text], "qwen2.5"), "content") == content


# ------------------------------------------------------------ SmolLM3 calls tools as Hermes
SMOL_CALL = (
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>'
)


@pytest.mark.parametrize(
    ("text", "options", "reasoning"),
    [
        # default (enable_thinking=True): the model opens <think> itself
        ("<think>\nI need the weather.\n</think>\n" + SMOL_CALL, {}, "I need the weather."),
        # /no_think: the prompt already wrote "<think>\n\n</think>\n"
        (SMOL_CALL, {"enable_thinking": False}, None),
    ],
)
def test_smollm3_tool_calls(text: str, options: dict[str, Any], reasoning: str | None) -> None:
    msg = assert_stream_equals_whole(text, "smollm3", tools=[WEATHER], **options)
    assert arguments(msg) == [("get_weather", {"city": "Paris", "days": 2}, None)]
    assert msg["content"] is None
    assert msg.get("reasoning_content") == reasoning


def test_smollm3_plain_answer() -> None:
    msg = assert_stream_equals_whole(
        "<think>\nEasy.\n</think>\n\nParis.", "smollm3", tools=[WEATHER]
    )
    assert msg == {"role": "assistant", "content": "Paris.", "reasoning_content": "Easy."}


# ------------------------------------------------------------ Granite 3 thinking
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        (
            "<think>The user asks 2+2.\n</think>\n<response>\nIt is 4.\n</response>",
            "The user asks 2+2.",
            "It is 4.",
        ),
        ("<think>a</think><response>b</response>", "a", "b"),
        # truncated inside the answer, inside the closing tag, inside the reasoning
        ("<think>a</think><response>The answ", "a", "The answ"),
        ("<think>a</think><response>b</resp", "a", "b</resp"),
        ("<think>a</think>\n<resp", "a", "<resp"),
        ("<think>a lo", "a lo", None),
        # text after the response is never dropped; a response without reasoning
        ("<think>a</think><response>b</response>\n\nNote: c", "a", "b\n\nNote: c"),
        ("<response>only</response>", None, "only"),
        ("No markup at all.", None, "No markup at all."),
    ],
)
def test_granite3_think_response(text: str, reasoning: str | None, content: str | None) -> None:
    msg = assert_stream_equals_whole(text, "granite3", thinking=True)
    assert msg.get("reasoning_content") == reasoning
    assert msg["content"] == content
    assert "tool_calls" not in msg


def test_granite3_tool_call_inside_the_response() -> None:
    text = (
        "<think>Weather needed.</think>\n<response><|tool_call|>"
        '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]</response>'
    )
    msg = assert_stream_equals_whole(text, "granite3", tools=[WEATHER], thinking=True)
    assert msg["reasoning_content"] == "Weather needed."
    assert arguments(msg) == [("get_weather", {"city": "Oslo"}, None)]
    assert msg["content"] is None


# ------------------------------------------------------------ GLM-4.5 output cut in a tag
GLM_CALL = (
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
)
PARIS = ("get_weather", {"city": "Paris"}, None)


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        # cut inside a closing tag: what it closes is complete, the cut tag is the call's
        # closing markup, never content (Ollama model/parsers/glm46_test.go,
        # TestGLM46ParserFinalizesCompleteToolCallOnDone)
        (GLM_CALL.replace("\n</tool_call>", "</tool_"), [PARIS], None),
        (GLM_CALL.removesuffix(">"), [PARIS], None),
        (GLM_CALL[: GLM_CALL.index("ue>\n</tool")], [PARIS], None),
        ("Checking." + GLM_CALL.replace("\n</tool_call>", "</"), [PARIS], "Checking."),
        # all pairs closed, no </tool_call>: a valid call (the vLLM case incomplete_no_close_tag)
        (GLM_CALL.removesuffix("\n</tool_call>"), [PARIS], None),
    ],
)
def test_glm45_cut_in_a_closing_tag(
    text: str, calls: list[tuple[str, Any, str | None]], content: str | None
) -> None:
    msg = assert_stream_equals_whole(text, "glm4.5", tools=[WEATHER])
    assert arguments(msg) == calls
    assert msg["content"] == content


@pytest.mark.parametrize(
    ("text", "name", "raw"),
    [
        # inside a value, a key's closing tag, <arg_value>: the pair's raw text so far
        (
            GLM_CALL[: GLM_CALL.index("Paris") + 3],
            "get_weather",
            "<arg_key>city</arg_key><arg_value>Par",
        ),
        (GLM_CALL[: GLM_CALL.index("</arg_key>") + 4], "get_weather", "<arg_key>city</ar"),
        (
            GLM_CALL[: GLM_CALL.index("<arg_value>") + 6],
            "get_weather",
            "<arg_key>city</arg_key><arg_v",
        ),
        # a further argument begun: the arguments so far, then its raw text
        (GLM_CALL.replace("\n</tool_call>", "\n<arg_k"), "get_weather", '{"city": "Paris"<arg_k'),
        # inside the name line: the name may be cut
        ("<tool_call>get_wea", "get_wea", ""),
    ],
)
def test_glm45_cut_inside_an_argument_is_a_truncated_call(text: str, name: str, raw: str) -> None:
    msg = assert_stream_equals_whole(text, "glm4.5")
    assert [c["function"] for c in msg["tool_calls"]] == [{"name": name, "arguments": raw}]
    assert [c.get("error") for c in msg["tool_calls"]] == ["truncated"]
    assert msg["content"] is None


# ------------------------------------------------------------ prefilled <think> repeated
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        ("<think>\nPlan.\n</think>\n\nAnswer", "Plan.", "Answer"),
        ("\n<think>Plan.</think>Answer", "Plan.", "Answer"),
        ("<think></think>Answer", None, "Answer"),
        # only a leading one is markup: later in the reasoning it is the model's text
        ("Plan: write <think> first.\n</think>\nAnswer", "Plan: write <think> first.", "Answer"),
        ("<think><think>x</think>y", "<think>x", "y"),
        # truncated right after the repeated tag, or inside it
        ("<think>", None, None),
        ("<thi", "<thi", None),
    ],
)
def test_prefilled_think_written_again_is_markup(
    text: str, reasoning: str | None, content: str | None
) -> None:
    for template, options in (("qwen3", {"thinking_prefilled": True}), ("glm4.7", {})):
        msg = assert_stream_equals_whole(text, template, **options)
        assert msg.get("reasoning_content") == reasoning
        assert msg["content"] == content


def test_prefilled_think_lookalike_stays_reasoning() -> None:
    """With token ids, only a real ``<think>`` special token is dropped; typed-out text stays."""
    ids = {"<think>": 151667, "</think>": 151668}
    text = "<think>x</think>y"
    real = parse(
        text,
        "qwen3",
        thinking_prefilled=True,
        special_token_ids=ids,
        token_ids=[151667, 1, 151668, 2],
    )
    typed = parse(
        text,
        "qwen3",
        thinking_prefilled=True,
        special_token_ids=ids,
        token_ids=[27, 26865, 29, 1, 151668, 2],
    )
    assert (real["reasoning_content"], real["content"]) == ("x", "y")
    assert (typed["reasoning_content"], typed["content"]) == ("<think>x", "y")


@pytest.mark.parametrize(("call_ids", "is_call"), [([49154, 1, 2], True), ([1, 2, 3], False)])
def test_granite3_token_ids_after_the_dropped_response_tags(
    call_ids: list[int], is_call: bool
) -> None:
    """Dropping the ``<response>`` tags does not shift where the tool parser looks for ids."""
    ids = {"<|tool_call|>": 49154, "<response>": 7, "</response>": 8}
    head, call = "<think>a</think><response>x </response>\n", '<|tool_call|>[{"name": "f"}]'
    sp = StreamParser("granite3", special_token_ids=ids)
    msg = merge_deltas(
        sp.feed(head, token_ids=[1, 2, 3, 7, 4, 8, 5])
        + sp.feed(call, token_ids=call_ids)
        + sp.finish()
    )
    assert msg["reasoning_content"] == "a"
    assert ("tool_calls" in msg) is is_call
    assert msg["content"] == ("x\n" if is_call else "x\n" + call)
