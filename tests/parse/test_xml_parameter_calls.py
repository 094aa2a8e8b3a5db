"""Qwen3-Coder-style XML-parameter calls (``qwen3_coder``, ``seed_oss``), Seed-OSS reasoning and
Nemotron Nano v2 ``<TOOLCALL>`` (``nemotron_json``): peer cases, typed values, look-alike closing
tags, truncation and broken-call policy, the templates' own round trips. Every case is checked
whole and streamed in every chunking (``_streaming.chunkings``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import chatfmt
from _streaming import assert_stream_equals_whole, decoded_calls, wire
from _xml_call_cases import (
    LCPP_CASES,
    LCPP_TOOLS,
    SEED_BUDGET0,
    SEED_BUDGET512,
    SEED_QUOTED,
    SEED_TOOLS,
    VLLM_CASES,
    VLLM_TOOLS,
    xml_call,
    xml_tool,
)
from chatfmt.parsing import StreamParser, end_of_turn_markers, parse

calls = decoded_calls


# ------------------------------------------------------------------ vLLM peer cases
@pytest.mark.parametrize(("text", "expected", "content"), VLLM_CASES)
def test_vllm_qwen3coder_cases(
    text: str, expected: list[tuple[str, Any]], content: str | None
) -> None:
    for template in ("qwen3_coder", "qwen3-coder", "Qwen/Qwen3-Coder-30B-A3B-Instruct"):
        msg = assert_stream_equals_whole(text, template, tools=VLLM_TOOLS)
        assert calls(msg) == [(n, a, None) for n, a in expected]
        assert msg["content"] == content


def test_vllm_type_conversion_case() -> None:
    """vLLM ``test_extract_tool_calls_type_conversion`` (``float`` is not a JSON type: a string)."""
    tools = [
        xml_tool(
            "test_types",
            {
                "int_param": {"type": "integer"},
                "float_param": {"type": "number"},
                "bool_param": {"type": "boolean"},
                "str_param": {"type": "string"},
                "obj_param": {"type": "object"},
            },
        )
    ]
    text = xml_call(
        "test_types",
        ("int_param", "42"),
        ("float_param", "3.14"),
        ("bool_param", "true"),
        ("str_param", "hello world"),
        ("obj_param", '{"key": "value"}'),
    )
    msg = assert_stream_equals_whole(text, "qwen3_coder", tools=tools)
    assert calls(msg) == [
        (
            "test_types",
            {
                "int_param": 42,
                "float_param": 3.14,
                "bool_param": True,
                "str_param": "hello world",
                "obj_param": {"key": "value"},
            },
            None,
        )
    ]


# SGLang test/srt/test_function_call_parser.py (TestQwen3CoderDetector): streamed chunks as the
# case gives them (also checked in every other chunking), the expected text and calls.
SGLANG_STREAMS = [
    # test_parse_streaming_simple
    (
        [
            "Sure! ",
            "Let me check ",
            "the weather.",
            "<tool_call>",
            "\n<function=get_current_weather>",
            "\n<parameter=city>",
            "\nDallas",
            "\n</parameter>",
            "\n<parameter=state>",
            "\nTX",
            "\n</parameter>",
            "\n</function>",
            "\n</tool_call>",
        ],
        {"city": "Dallas", "state": "TX"},
        VLLM_TOOLS,
    ),
    # test_parse_streaming_simple_list_value: a Python-literal list for an array parameter
    (
        [
            "Sure! ",
            "Let me check ",
            "the weather.",
            "<tool_call>",
            "\n<function=get_current_weather>",
            "\n<parameter=city>",
            "\nDallas",
            "\n</parameter>",
            "\n<parameter=state>",
            "\n['SEATTLE/WA','LA.KO']\n",
            "\n</parameter>",
            "\n</function>",
            "\n</tool_call>",
        ],
        {"city": "Dallas", "state": ["SEATTLE/WA", "LA.KO"]},
        [xml_tool("get_current_weather", {"city": {"type": "string"}, "state": {"type": "array"}})],
    ),
    # test_parse_streaming_iregular_blocks: markers cut across chunks
    (
        [
            "Sure! ",
            "Let me check ",
            "the weather.",
            "<tool_call",
            ">\n<function=",
            "get_current_weather>\n<parameter=city>",
            "\nDallas",
            "\n<",
            "/parameter>\n<parameter=state",
            ">\nTX",
            "\n</parameter>",
            "\n</function>",
            "\n</tool_call>",
        ],
        {"city": "Dallas", "state": "TX"},
        VLLM_TOOLS,
    ),
    # test_edge_case_special_chars_in_value
    (
        [
            "<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas->TX\n</parameter>\n"
            "</function>\n</tool_call>"
        ],
        {"city": "Dallas->TX"},
        VLLM_TOOLS,
    ),
]


@pytest.mark.parametrize(("chunks", "args", "tools"), SGLANG_STREAMS)
def test_sglang_qwen3coder_streams(
    chunks: list[str], args: dict[str, Any], tools: list[Any]
) -> None:
    text = "".join(chunks)
    msg = assert_stream_equals_whole(text, "qwen3_coder", tools=tools, extra=[chunks])
    assert calls(msg) == [("get_current_weather", args, None)]
    assert msg["content"] == (text[: text.index("<tool_call")] or None)


@pytest.mark.parametrize(
    ("text", "args"),
    [
        (SEED_BUDGET0, {"location": "Barcelona, Spain"}),
        (SEED_BUDGET512, {"location": "Barcelona, Spain"}),
        # the reasoning quotes a call: it stays reasoning
        (SEED_QUOTED, {"location": "Barcelona, Spain", "unit": "celsius"}),
    ],
)
def test_vllm_seed_oss_cases(text: str, args: dict[str, Any]) -> None:
    for template in ("seed-oss", "ByteDance-Seed/Seed-OSS-36B-Instruct"):
        msg = assert_stream_equals_whole(text + "<seed:eos>", template, tools=SEED_TOOLS)
        assert calls(msg) == [("get_weather", args, None)]
        assert msg["content"] is None
        inner = text[len("<seed:think>") : text.index("</seed:think>")]
        assert msg["reasoning_content"] == inner.strip()
        assert "cot_budget_reflect" in msg["reasoning_content"] or "Got it" in inner


@pytest.mark.parametrize(("text", "options", "reasoning", "content", "expected"), LCPP_CASES)
@pytest.mark.parametrize("template", ["qwen3.5", "nemotron3-nano"])
def test_llamacpp_cases(
    template: str,
    text: str,
    options: dict[str, Any],
    reasoning: str | None,
    content: str | None,
    expected: list[Any],
) -> None:
    msg = assert_stream_equals_whole(text, template, tools=LCPP_TOOLS, **options)
    assert calls(msg) == expected
    assert msg.get("reasoning_content") == reasoning
    assert msg["content"] == content


# ------------------------------------------------------------------ values
WRITE = xml_tool(
    "write",
    {
        "path": {"type": "string"},
        "content": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "force": {"type": "boolean"},
        "tags": {"type": "array"},
        "meta": {"type": "object"},
        "either": {"type": ["integer", "null"]},
    },
)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("count", "7", 7),
        ("count", "seven", "seven"),  # does not convert: kept as text
        ("ratio", "0.25", 0.25),
        ("force", "False", False),
        ("tags", '["a", "b"]', ["a", "b"]),
        ("tags", "['a', 1]", ["a", 1]),  # a Python literal
        ("meta", '{"k": [1, {"x": null}]}', {"k": [1, {"x": None}]}),
        ("either", "null", None),
        ("content", "007", "007"),  # a string stays a string
        ("unknown", "42", "42"),  # no schema for the parameter: text
        # only the template's newline on each side is markup; the rest is the value
        ("content", "\n  indented\n\nblank line kept\n", "\n  indented\n\nblank line kept\n"),
        ("content", "a < b && c > d", "a < b && c > d"),
        ("content", 'quote " backslash \\ tab \t é ✓', 'quote " backslash \\ tab \t é ✓'),
    ],
)
def test_values_are_converted_by_the_schema(key: str, value: str, expected: Any) -> None:
    msg = assert_stream_equals_whole(xml_call("write", (key, value)), "qwen3_coder", tools=[WRITE])
    assert calls(msg) == [("write", {key: expected}, None)]
    got = json.loads(msg["tool_calls"][0]["function"]["arguments"])[key]
    assert type(got) is type(expected)


def test_without_tools_every_value_is_text() -> None:
    msg = assert_stream_equals_whole(
        xml_call("write", ("count", "7"), ("force", "true")), "qwen3_coder"
    )
    assert calls(msg) == [("write", {"count": "7", "force": "true"}, None)]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # a </parameter> that no parameter, </function> or end of block follows is value text
        ("x = '</parameter>' + y", "x = '</parameter>' + y"),
        ("</parameter>\nstill the value", "</parameter>\nstill the value"),
        (
            "see <parameter=fake>inner</parameter> text",
            "see <parameter=fake>inner</parameter> text",
        ),
        ("ends with a tag </function", "ends with a tag </function"),
    ],
)
def test_closing_tag_lookalikes_stay_in_the_value(value: str, expected: str) -> None:
    text = xml_call("write", ("content", value), ("path", "a.py"))
    msg = assert_stream_equals_whole(text, "qwen3_coder", tools=[WRITE])
    assert calls(msg) == [("write", {"content": expected, "path": "a.py"}, None)]


def test_string_values_stream_as_they_come() -> None:
    """A string value's text is sent before its closing tag; a typed value once it is complete."""
    sp = StreamParser("qwen3_coder", tools=[WRITE])
    deltas = sp.feed("<tool_call>\n<function=write>\n<parameter=content>\nfirst part of a long ")
    sent = "".join(
        e["function"]["arguments"]
        for d in wire(deltas)
        for e in d.get("tool_calls", [])
        if "function" in e
    )
    assert sent == '{"content": "first part of a long '
    deltas = sp.feed("file\n</parameter>\n<parameter=count>\n12")
    sent = "".join(
        e["function"]["arguments"]
        for d in wire(deltas)
        for e in d.get("tool_calls", [])
        if "function" in e
    )
    assert sent == 'file"'  # the count is not sent until it is complete


# ------------------------------------------------------------------ robustness
CALL = xml_call("write", ("path", "a.py"), ("count", "3"))


@pytest.mark.parametrize(
    ("text", "expected", "content"),
    [
        # cut inside a closing tag: the call is complete, the cut tag is text
        (CALL.removesuffix("l>"), [("write", {"path": "a.py", "count": 3}, None)], "</tool_cal"),
        (
            CALL[: CALL.index("</function>") + 5],
            [("write", {"path": "a.py", "count": 3}, None)],
            "</fun",
        ),
        (
            CALL[: CALL.rindex("</parameter>") + 4],
            [("write", {"path": "a.py", "count": 3}, None)],
            "</pa",
        ),
        # all parameters closed, no </function> / </tool_call>: a valid call
        (CALL[: CALL.index("</function>")], [("write", {"path": "a.py", "count": 3}, None)], None),
        # cut inside a string value / a typed value / a key / the name
        (CALL[: CALL.index("a.py") + 3], [("write", '{"path": "a.p', "truncated")], None),
        (
            CALL[: CALL.index("3\n")],
            [("write", '{"path": "a.py"<parameter=count>\n', "truncated")],
            None,
        ),
        (
            CALL[: CALL.index("count") + 3],
            [("write", '{"path": "a.py"<parameter=cou', "truncated")],
            None,
        ),
        (CALL[: CALL.index("write") + 3], [("wri", "", "truncated")], None),
        (
            CALL[: CALL.index("<parameter=count") + 5],
            [("write", '{"path": "a.py"<para', "truncated")],
            None,
        ),
    ],
)
def test_truncated_output(text: str, expected: list[Any], content: str | None) -> None:
    msg = assert_stream_equals_whole(text, "qwen3_coder", tools=[WRITE])
    assert calls(msg) == expected
    assert msg["content"] == content


@pytest.mark.parametrize(
    ("text", "expected", "content"),
    [
        # a name line that never closes: flagged with its raw text, the block is skipped
        (
            "<tool_call>\n<function=write\n<parameter=a>1</parameter></function></tool_call>Done.",
            [("", "<function=write\n<parameter=a>1</parameter></function>", "no tool name")],
            "Done.",
        ),
        # text where a parameter should be
        (
            "<tool_call>\n<function=write>\noops\n</function>\n</tool_call>",
            [("write", "oops\n</function>\n", "malformed <function=…>/<parameter=…> markup")],
            None,
        ),
        # the Hermes JSON form inside the wrapper is read as a call
        (
            '<tool_call>\n{"name": "write", "arguments": {"path": "b"}}\n</tool_call>',
            [("write", {"path": "b"}, None)],
            None,
        ),
        # several functions in one wrapper; a call without parameters
        (
            "<tool_call>\n<function=write>\n</function>\n<function=write>\n"
            "<parameter=count>\n1\n</parameter>\n</function>\n</tool_call>",
            [("write", {}, None), ("write", {"count": 1}, None)],
            None,
        ),
        # text around calls is content; a stray closing tag in prose is text
        (
            "Before </tool_call> text.\n" + CALL + "\nAfter.",
            [("write", {"path": "a.py", "count": 3}, None)],
            "Before </tool_call> text.\n\nAfter.",
        ),
    ],
)
def test_broken_calls_are_flagged_and_text_kept(
    text: str, expected: list[Any], content: str | None
) -> None:
    msg = assert_stream_equals_whole(text, "qwen3_coder", tools=[WRITE])
    assert calls(msg) == expected
    assert msg["content"] == content


def test_unknown_tool_is_flagged_when_tools_are_given() -> None:
    text = xml_call("delete_all", ("path", "/"))
    msg = assert_stream_equals_whole(text, "qwen3_coder", tools=[WRITE])
    assert calls(msg) == [("delete_all", {"path": "/"}, "unknown tool 'delete_all'")]
    assert calls(assert_stream_equals_whole(text, "qwen3_coder")) == [
        ("delete_all", {"path": "/"}, None)
    ]


def test_seed_values_have_no_newlines_to_strip() -> None:
    body = xml_call("write", ("content", "two\nlines"), ("count", "4"), nl="")
    text = "<seed:think>ok</seed:think>\n" + body.replace("tool_call>", "seed:tool_call>")
    msg = assert_stream_equals_whole(text, "seed-oss", tools=[WRITE])
    assert calls(msg) == [("write", {"content": "two\nlines", "count": 4}, None)]
    assert msg["reasoning_content"] == "ok" and msg["content"] is None
    # cut inside a typed value: its raw text as written (no newline added)
    cut = "<seed:tool_call>\n<function=write>\n<parameter=count>12"
    msg = assert_stream_equals_whole(cut, "seed_oss", tools=[WRITE])
    assert calls(msg) == [("write", "<parameter=count>12", "truncated")]
    # Qwen's wrapper is text to the Seed parser (the function inside is read as a bare one,
    # and the newlines around its values are no markup to Seed)
    msg = assert_stream_equals_whole(CALL, "seed_oss", tools=[WRITE])
    assert msg["content"] == "<tool_call>\n\n</tool_call>"
    assert calls(msg) == [("write", {"path": "\na.py\n", "count": 3}, None)]


BARE = "<function=write>\n<parameter=path>\na.py\n</parameter>\n</function>"


@pytest.mark.parametrize(
    ("text", "expected", "content"),
    [
        # vLLM test_extract_tool_calls_fallback_no_tags: the <tool_call> wrapper left out
        (BARE, [("write", {"path": "a.py"}, None)], None),
        (
            "I'll write it.\n" + BARE + "\nDone.",
            [("write", {"path": "a.py"}, None)],
            "I'll write it.\n\nDone.",
        ),
        (BARE + "\n" + BARE, [("write", {"path": "a.py"}, None)] * 2, None),
        # not at the start of a line: prose about the format is text
        ("Write <function=name> then", [], "Write <function=name> then"),
        # a broken bare call is flagged up to its </function>; the text after it is content
        (
            "<function=write>\ngarbage\n</function>\nok",
            [("write", "garbage\n", "malformed <function=…>/<parameter=…> markup")],
            "\nok",
        ),
    ],
)
def test_function_without_its_wrapper(text: str, expected: list[Any], content: str | None) -> None:
    msg = assert_stream_equals_whole(text, "qwen3_coder", tools=[WRITE])
    assert calls(msg) == expected
    assert msg["content"] == content


# ------------------------------------------------------------------ templates
WEATHER = xml_tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})
HISTORY = [{"role": "user", "content": "Weather in Paris?"}]
TURN = {
    "role": "assistant",
    "content": "Let me check.",
    "reasoning_content": "The user asks about Paris.",
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 2}'},
        },
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'},
        },
    ],
}


@pytest.mark.parametrize(
    ("template", "options", "reasoning"),
    [
        ("qwen3.5", {}, True),
        ("qwen3.5", {"enable_thinking": False}, False),
        ("nemotron3-nano", {}, True),
        ("nemotron3-nano", {"enable_thinking": False}, False),
        ("step3.5", {}, True),
        ("seed-oss", {}, True),
        ("seed-oss", {"thinking_budget": 512}, True),
        ("qwen3-coder", {}, False),
    ],
)
def test_rendered_turn_parses_back(template: str, options: dict[str, Any], reasoning: bool) -> None:
    """The template's own rendering of a turn with reasoning, text and two calls, after its
    generation prompt, parses back to that turn (with and without the end-of-turn marker)."""
    turn = TURN if reasoning else {k: v for k, v in TURN.items() if k != "reasoning_content"}
    prompt = chatfmt.render(HISTORY, template, tools=[WEATHER], **options)
    full = chatfmt.render(
        [*HISTORY, turn], template, tools=[WEATHER], add_generation_prompt=False, **options
    )
    assert full.startswith(prompt)
    out = full[len(prompt) :]
    marker = end_of_turn_markers(template, **options)[0]
    for text in (out, out[: out.index(marker)]):
        msg = assert_stream_equals_whole(text, template, tools=[WEATHER], **options)
        assert calls(msg) == [
            ("get_weather", {"city": "Paris", "days": 2}, None),
            ("get_weather", {"city": "Lyon"}, None),
        ]
        assert msg["content"].strip() == "Let me check."  # whitespace around calls kept
        assert msg.get("reasoning_content") == (TURN["reasoning_content"] if reasoning else None)


def test_thinking_prefill_follows_the_generation_prompt() -> None:
    """Qwen3.5 / Step-3.5 / Nemotron 3 prompts open ``<think>``: output starts inside it."""
    text = "Plan.\n</think>\n\nAnswer."
    for template in ("qwen3.5", "step3.5", "nemotron3-nano", "nemotron-nano-v2"):
        msg = parse(text, template)
        assert (msg.get("reasoning_content"), msg["content"]) == ("Plan.", "Answer."), template
    assert parse("Answer.", "qwen3.5", enable_thinking=False)["content"] == "Answer."
    assert parse("Answer.", "nemotron3-nano", enable_thinking=False)["content"] == "Answer."
    # Seed-OSS: the model opens the block itself; thinking_budget=0 closes it in the prompt
    assert parse("<seed:think>x</seed:think>Hi", "seed-oss")["reasoning_content"] == "x"
    assert parse("Hi", "seed-oss", thinking_budget=0)["content"] == "Hi"


# ------------------------------------------------------------------ Nemotron Nano v2
NANO_CALLS = (
    '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}, '
    '{"name": "get_weather", "arguments": {"city": "Lyon"}}]</TOOLCALL>'
)


@pytest.mark.parametrize(
    ("text", "reasoning", "content", "expected"),
    [
        (
            "Two cities.\n</think>\n\n" + NANO_CALLS + "\n<SPECIAL_12>\n",
            "Two cities.",
            None,
            [
                ("get_weather", {"city": "Paris", "days": 2}, None),
                ("get_weather", {"city": "Lyon"}, None),
            ],
        ),
        ("</think>Sunny.\n<SPECIAL_12>\n", None, "Sunny.", []),
        # cut inside the list: the call so far is flagged
        (
            '</think><TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Par',
            None,
            None,
            [("get_weather", '{"city": "Par', "truncated")],
        ),
        # not a call list: flagged with its raw text
        (
            "</think><TOOLCALL>get_weather(Paris)</TOOLCALL>ok",
            None,
            "ok",
            [("", "get_weather(Paris)", "not a tool call")],
        ),
    ],
)
def test_nemotron_nano_v2_toolcall(
    text: str, reasoning: str | None, content: str | None, expected: list[Any]
) -> None:
    for template in ("nemotron-nano-v2", "nvidia/NVIDIA-Nemotron-Nano-9B-v2"):
        msg = assert_stream_equals_whole(text, template, tools=[WEATHER])
        assert calls(msg) == expected
        assert msg.get("reasoning_content") == reasoning
        assert (msg["content"] or "").strip() == (content or "")


def test_nemotron_nano_v2_rendered_calls_parse_back() -> None:
    """The template renders a final call turn as its own assistant turn after the prompt."""
    turn = {k: v for k, v in TURN.items() if k not in ("content", "reasoning_content")}
    turn["content"] = None
    prompt = chatfmt.render(HISTORY, "nemotron-nano-v2", tools=[WEATHER])
    full = chatfmt.render(
        [*HISTORY, turn], "nemotron-nano-v2", tools=[WEATHER], add_generation_prompt=False
    )
    base = prompt.removesuffix("<think>\n")
    assert full.startswith(base)
    out = "Two cities.\n</think>\n\n" + full[len(base) :].removeprefix("<SPECIAL_11>Assistant\n")
    msg = assert_stream_equals_whole(out, "nemotron-nano-v2", tools=[WEATHER])
    assert [c[:2] for c in calls(msg)] == [
        ("get_weather", {"city": "Paris", "days": 2}),
        ("get_weather", {"city": "Lyon"}),
    ]


def test_parsers_are_registered_under_their_names() -> None:
    for name in ("qwen3_coder", "qwen3_xml", "seed_oss", "nemotron_json"):
        assert parse("plain", parser=name)["content"] == "plain"
    assert parse("<seed:think>r</seed:think>a", "seed_think") == {
        "role": "assistant",
        "content": "a",
        "reasoning_content": "r",
    }
