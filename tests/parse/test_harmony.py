"""The Harmony (gpt-oss) output parser: peer cases, robustness, end of turn, stream ≡ whole.

Outputs are what the model writes after the generation prompt ``<|start|>assistant``.
Every case is also streamed over every chunking (``chunkings``) and must equal the
whole parse.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _streaming import assert_stream_equals_whole, call_ids, wire
from chatfmt.families.gpt_oss.parser import MAX_HEADER
from chatfmt.parsing import StreamParser, merge_deltas, parse

A = "<|channel|>analysis<|message|>I'm\nthinking<|end|>"
NEXT = "<|start|>assistant"
CALL_HEAD = "<|channel|>commentary to=functions.special_function <|constrain|>json<|message|>"

#: (id, output, content, reasoning, calls as (name, arguments, error or None)).
#: Peer facts: llama.cpp tests/test-chat.cpp (test_gpt_oss_parser), vLLM
#: tests/tool_use/test_openai_tool_parser.py and tests/reasoning/test_gptoss_reasoning_parser.py
#: (outputs written here as the text after the generation prompt).
PEER_CASES: list[tuple[str, str, str | None, str | None, list[tuple[str, str, str | None]]]] = [
    (
        "llamacpp/partial_reasoning",
        "<|channel|>analysis<|message|>I'm\nthink",
        None,
        "I'm\nthink",
        [],
    ),
    ("llamacpp/reasoning_only", A, None, "I'm\nthinking", []),
    (
        "llamacpp/reasoning_final",
        A + NEXT + "<|channel|>final<|message|>Hello, world!\nWhat's up?",
        "Hello, world!\nWhat's up?",
        "I'm\nthinking",
        [],
    ),
    (
        # llama.cpp returns the partial call as is; here a cut call is flagged (policy)
        "llamacpp/partial_call",
        A + NEXT + CALL_HEAD + '{"arg1',
        None,
        "I'm\nthinking",
        [("special_function", '{"arg1', "truncated")],
    ),
    (
        "llamacpp/partial_call_no_constrain",
        A + NEXT + '<|channel|>commentary to=functions.special_function<|message|>{"arg1',
        None,
        "I'm\nthinking",
        [("special_function", '{"arg1', "truncated")],
    ),
    (
        "llamacpp/call",
        A + NEXT + CALL_HEAD + '{"arg1": 1}',
        None,
        "I'm\nthinking",
        [("special_function", '{"arg1": 1}', None)],
    ),
    (
        "llamacpp/call_on_analysis_channel",
        A
        + NEXT
        + '<|channel|>analysis to=functions.special_function <|constrain|>json<|message|>{"arg1": 1}',
        None,
        "I'm\nthinking",
        [("special_function", '{"arg1": 1}', None)],
    ),
    (
        "llamacpp/preamble",
        A + NEXT + "<|channel|>commentary<|message|>Hello, world!\nWhat's up?",
        "Hello, world!\nWhat's up?",
        "I'm\nthinking",
        [],
    ),
    (
        "llamacpp/preamble_then_call",
        A
        + NEXT
        + "<|channel|>commentary<|message|>Hello, world!\nWhat's up?<|end|>"
        + NEXT
        + CALL_HEAD
        + '{"arg1": 1}',
        "Hello, world!\nWhat's up?",
        "I'm\nthinking",
        [("special_function", '{"arg1": 1}', None)],
    ),
    (
        "llamacpp/recipient_in_role_header",
        ' to=functions.special_function<|channel|>commentary <|constrain|>json<|message|>{"arg1": 1}',
        None,
        None,
        [("special_function", '{"arg1": 1}', None)],
    ),
    (
        "llamacpp/recipient_in_role_header_analysis",
        ' to=functions.special_function<|channel|>analysis <|constrain|>json<|message|>{"arg1": 1}',
        None,
        None,
        [("special_function", '{"arg1": 1}', None)],
    ),
    (
        "llamacpp/recipient_after_start",
        A
        + NEXT
        + ' to=functions.special_function<|channel|>analysis <|constrain|>json<|message|>{"arg1": 1}',
        None,
        "I'm\nthinking",
        [("special_function", '{"arg1": 1}', None)],
    ),
    (
        "vllm/no_tools",
        "<|channel|>final<|message|>This is a test<|end|>",
        "This is a test",
        None,
        [],
    ),
    (
        "vllm/single_tool_pretty_args",
        '<|channel|>analysis<|message|>User asks.<|end|><|start|>assistant to=functions.get_current_weather<|channel|>commentary json<|message|>{\n"location": "Tokyo"\n}<|call|>',
        None,
        "User asks.",
        [("get_current_weather", '{\n"location": "Tokyo"\n}', None)],
    ),
    (
        # vLLM keeps "foo" as valid arguments and "" as ""; here non-JSON arguments are flagged
        # (policy) and a call without arguments has {}.
        "vllm/multiple_tools",
        "<|start|>assistant to=functions.get_user_location<|channel|>commentary json<|message|>"
        '{"location": "Tokyo"}<|call|>'
        "<|start|>assistant to=functions.no_content_type<|channel|>commentary<|message|>"
        '{"location": "Tokyo"}<|call|>'
        "<|start|>assistant to=functions.not_json_no_content_type<|channel|>commentary<|message|>foo<|call|>"
        "<|start|>assistant to=functions.empty_args<|channel|>commentary json<|message|>{}<|call|>"
        "<|start|>assistant to=functions.no_args<|channel|>commentary json<|message|><|call|>",
        None,
        None,
        [
            ("get_user_location", '{"location": "Tokyo"}', None),
            ("no_content_type", '{"location": "Tokyo"}', None),
            ("not_json_no_content_type", "foo", "arguments are not valid JSON"),
            ("empty_args", "{}", None),
            ("no_args", "{}", None),
        ],
    ),
    (
        "vllm/tool_then_final",
        "<|start|>assistant to=functions.get_current_weather<|channel|>commentary json<|message|>"
        '{"location": "Tokyo"}<|call|><|start|>assistant<|channel|>final<|message|>'
        "This tool call will get the weather.<|end|>",
        "This tool call will get the weather.",
        None,
        [("get_current_weather", '{"location": "Tokyo"}', None)],
    ),
    (
        "vllm/reasoning_constrained_final",
        "<|end|><|start|>assistant<|channel|>analysis<|message|>This is reasoning<|end|>"
        "<|start|>assistant<|channel|>final<|constrain|> JSON <|message|>This is the rest",
        "This is the rest",
        "This is reasoning",
        [],
    ),
    (
        "vllm/reasoning_constrained_reply_action",
        "<|end|><|start|>assistant<|channel|>analysis<|message|>This is reasoning<|end|>"
        "<|start|>assistant<|channel|>final<|constrain|>ReplyAction <|message|>This is the rest",
        "This is the rest",
        "This is reasoning",
        [],
    ),
]

#: Robustness (docs/parsing.md) and format facts, same shape.
OWN_CASES: list[tuple[str, str, str | None, str | None, list[tuple[str, str, str | None]]]] = [
    ("no_header", "Just an answer.", "Just an answer.", None, []),
    ("no_header_leading_to", "  to be or not", "  to be or not", None, []),
    ("cut_header_is_markup", "<|channel|>fin", None, None, []),
    (
        "cut_recipient",
        "<|channel|>commentary to=functions.get_wea",
        None,
        None,
        [("get_wea", "", "truncated")],
    ),
    (
        "malformed_args",
        '<|channel|>commentary to=functions.f json<|message|>{"a": }<|end|>',
        None,
        None,
        [("f", '{"a": }', "arguments are not valid JSON")],
    ),
    (
        "args_not_an_object",
        "<|channel|>commentary to=functions.f json<|message|>[1, 2]",
        None,
        None,
        [("f", "[1, 2]", "arguments are not a JSON object")],
    ),
    (
        "builtin_browser_call",
        '<|channel|>analysis to=browser.search code<|message|>{"query": "x"}<|call|>',
        None,
        None,
        [("browser.search", '{"query": "x"}', None)],
    ),
    (
        "missing_end_between_messages",
        "<|channel|>analysis<|message|>r<|start|>assistant<|channel|>final<|message|>a",
        "a",
        "r",
        [],
    ),
    (
        "missing_start_between_messages",
        "<|channel|>analysis<|message|>r<|end|><|channel|>final<|message|>a",
        "a",
        "r",
        [],
    ),
    (
        "other_role_is_kept_as_content",
        '<|channel|>final<|message|>hi<|end|><|start|>functions.f to=assistant<|channel|>commentary<|message|>"x"<|end|>',
        'hi<|start|>functions.f to=assistant<|channel|>commentary<|message|>"x"',
        None,
        [],
    ),
    (
        "header_without_body",
        "<|channel|>analysis<|end|><|start|>assistant<|channel|>final<|message|>a",
        "a",
        None,
        [],
    ),
    (
        "end_marker_inside_a_json_string_is_text",
        '<|channel|>commentary to=functions.f json<|message|>{"a": "x<|end|>y"}<|end|>'
        "<|start|>assistant<|channel|>final<|message|>ok",
        "ok",
        None,
        [("f", '{"a": "x<|end|>y"}', None)],
    ),
    (
        "broken_json_ends_at_the_next_marker",
        '<|channel|>commentary to=functions.f json<|message|>{"a": 1<|end|>'
        "<|start|>assistant<|channel|>final<|message|>ok",
        "ok",
        None,
        [("f", '{"a": 1', "arguments are not valid JSON")],
    ),
    (
        "json_text_with_markers_inside_a_string",
        '<|channel|>commentary to=functions.f json<|message|>{"a": "<|channel|>x"}',
        None,
        None,
        [("f", '{"a": "<|channel|>x"}', None)],
    ),
]


def _calls(msg: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    out = []
    for c in msg.get("tool_calls") or ():
        if c["type"] == "code_interpreter":
            out.append(("python", c["code_interpreter"]["input"], c.get("error")))
        else:
            out.append((c["function"]["name"], c["function"]["arguments"], c.get("error")))
    return out


@pytest.mark.parametrize(
    ("text", "content", "reasoning", "calls"),
    [c[1:] for c in PEER_CASES + OWN_CASES],
    ids=[c[0] for c in PEER_CASES + OWN_CASES],
)
def test_cases_whole_and_streamed(
    text: str, content: str | None, reasoning: str | None, calls: list[tuple[str, str, str | None]]
) -> None:
    msg = assert_stream_equals_whole(text, "harmony")
    assert msg["content"] == content
    assert msg.get("reasoning_content") == reasoning
    assert _calls(msg) == calls


def test_python_is_a_code_interpreter_call() -> None:
    text = "<|channel|>analysis to=python code<|message|>print(1 + 1)<|call|>"
    msg = assert_stream_equals_whole(text, "harmony")
    assert msg["tool_calls"][0]["type"] == "code_interpreter"
    assert msg["tool_calls"][0]["code_interpreter"] == {"input": "print(1 + 1)"}


def test_unknown_and_builtin_tools_are_flagged_when_tools_are_given() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    text = (
        '<|channel|>commentary to=functions.get_weather json<|message|>{"city": "Paris"}<|end|>'
        "<|start|>assistant<|channel|>commentary to=functions.nope json<|message|>{}<|end|>"
        '<|start|>assistant<|channel|>analysis to=browser.search<|message|>{"query": "x"}'
    )
    msg = assert_stream_equals_whole(text, "harmony", tools=tools)
    assert [c.get("error") for c in msg["tool_calls"]] == [
        None,
        "unknown tool 'nope'",
        "unknown tool 'browser.search'",
    ]


@pytest.mark.parametrize("length", [MAX_HEADER - 12, MAX_HEADER - 11, MAX_HEADER + 1, 600])
def test_a_header_is_bounded(length: int) -> None:
    """A header longer than MAX_HEADER before <|message|> is not a header: its text is content
    (also when the stream is cut inside the marker at the bound)."""
    head = "<|channel|>" + "x" * (length - len("<|channel|>"))
    text = head + "<|message|>tail"
    at = len(head)
    cuts = [[text[:k], text[k:]] for k in range(at - 2, at + 12)]
    msg = assert_stream_equals_whole(text, "harmony", extra=cuts)
    assert msg["content"] == ("tail" if length <= MAX_HEADER else text)


# ------------------------------------------------------------------ with the template
def test_call_ends_the_turn() -> None:
    text = (
        "<|channel|>analysis<|message|>Need weather.<|end|>"
        '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": '
        '"Paris"}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary'
    )
    msg = assert_stream_equals_whole(text, "gpt-oss")
    assert msg.finish_reason == "tool_calls"
    assert msg.trailing_text == "<|start|>functions.get_weather to=assistant<|channel|>commentary"
    assert msg["reasoning_content"] == "Need weather."
    assert _calls(msg) == [("get_weather", '{"city": "Paris"}', None)]


def test_return_ends_the_turn() -> None:
    msg = parse("<|channel|>final<|message|>Hi!<|return|><|start|>user", "openai/gpt-oss-20b")
    assert (msg["content"], msg.finish_reason, msg.trailing_text) == (
        "Hi!",
        "stop",
        "<|start|>user",
    )
    cut = parse("<|channel|>final<|message|>Hi", "gpt-oss", truncated=True)
    assert (cut["content"], cut.finish_reason) == ("Hi", "length")


def test_arguments_stream_as_they_come() -> None:
    sp = StreamParser("gpt-oss", id_factory=call_ids)
    deltas = sp.feed('<|channel|>commentary to=functions.f json<|message|>{"city": "Pa')
    assert wire(deltas)[-1]["tool_calls"][0]["function"] == {
        "name": "f",
        "arguments": '{"city": "Pa',
    }
    deltas += sp.feed('ris"}')
    deltas += sp.finish()
    assert merge_deltas(deltas)["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'


#: The Harmony special-token ids (o200k_harmony).
IDS = {
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|channel|>": 200005,
    "<|constrain|>": 200003,
    "<|return|>": 200002,
    "<|call|>": 200012,
}


def test_lookalike_markers_in_text_are_text_with_token_ids() -> None:
    chunks = [
        ("<|channel|>", [IDS["<|channel|>"]]),
        ("analysis", [1]),
        ("<|message|>", [IDS["<|message|>"]]),
        ("quote <|end|> and <|return|>", [2, 3, 4, 5]),  # spelled by ordinary tokens
        ("<|end|>", [IDS["<|end|>"]]),
        ("<|start|>", [IDS["<|start|>"]]),
        ("assistant<|channel|>final", [6, IDS["<|channel|>"], 7]),
        ("<|message|>", [IDS["<|message|>"]]),
        ("ok", [8]),
        ("<|return|>", [IDS["<|return|>"]]),
    ]
    sp = StreamParser("gpt-oss", special_token_ids=IDS)
    deltas = [d for text, ids in chunks for d in sp.feed(text, token_ids=ids)] + sp.finish()
    msg = merge_deltas(deltas)
    assert msg["reasoning_content"] == "quote <|end|> and <|return|>"
    assert msg["content"] == "ok"
    assert sp.finish_reason == "stop"


# ------------------------------------------------------------------ generated outputs
_PIECES = st.sampled_from(
    [
        "<|start|>assistant",
        "<|channel|>analysis",
        "<|channel|>final",
        "<|channel|>commentary",
        " to=functions.f",
        " to=python",
        " to=browser.search",
        " json",
        "<|constrain|>json",
        "<|message|>",
        "<|end|>",
        "<|call|>",
        "<|return|>",
        '{"a": "<|end|>"}',
        '{"a": 1',
        "}",
        "text ",
        "\n",
        "  ",
        "to=",
        "<|",
        "<|chan",
    ]
)


@pytest.mark.parametrize("name", ["harmony", "gpt-oss"])
@given(text=st.lists(_PIECES, max_size=10).map("".join))
def test_generated_outputs_stream_like_the_whole(name: str, text: str) -> None:
    """Any mix of Harmony markup and text, with the bare parser and with the template's
    end-of-turn layer: the stream equals the whole parse, nothing raises."""
    msg = assert_stream_equals_whole(text, name)
    assert set(msg) <= {"role", "content", "reasoning_content", "tool_calls"}
