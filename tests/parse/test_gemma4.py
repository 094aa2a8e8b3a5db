"""Gemma 4: ``<|tool_call>call:NAME{…}<tool_call|>`` calls and ``<|channel>thought…<channel|>`` reasoning.

Peer cases are data from the peers' tests (files cited per block); every case is also
streamed in every chunking (``_streaming.chunkings``) and must equal the whole parse.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _streaming import assert_stream_equals_whole, call_ids, stream_deltas
from chatfmt.families.gemma.parser import GemmaSyntaxError, gemma_value
from chatfmt.parsing import end_of_turn_markers, merge_deltas, parse

Calls = list[tuple[str, dict[str, Any]]]
Q = '<|"|>'


def _call(name: str, body: str) -> str:
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


#: (id, output, expected calls, expected content, expected reasoning)
PEER_CASES: list[tuple[str, str, Calls, str | None, str | None]] = [
    # llama.cpp tests/test-chat.cpp ("Google Gemma 4" peg_tester cases)
    ("llamacpp/content", "Hello, world!", [], "Hello, world!", None),
    (
        "llamacpp/reasoning",
        "<|channel>thought\nI'm\nthinking<channel|>Hello, world!\nWhat's up?",
        [],
        "Hello, world!\nWhat's up?",
        "I'm\nthinking",
    ),
    (
        "llamacpp/empty_reasoning",
        "<|channel>thought<channel|>Hello, world!\nWhat's up?",
        [],
        "Hello, world!\nWhat's up?",
        None,
    ),
    (
        "llamacpp/trailing_empty_thought",
        "<|channel>thought\n<channel|>Hello, world!\nWhat's up?<|channel>thought\n<channel|>",
        [],
        "Hello, world!\nWhat's up?",
        None,
    ),
    (
        "llamacpp/string",
        _call("get_time", f"city:{Q}London{Q}"),
        [("get_time", {"city": "London"})],
        None,
        None,
    ),
    (
        "llamacpp/string_space",
        _call("get_time", f"city:{Q}San Francisco{Q}"),
        [("get_time", {"city": "San Francisco"})],
        None,
        None,
    ),
    ("llamacpp/empty_args", _call("empty_args", ""), [("empty_args", {})], None, None),
    (
        "llamacpp/content_then_call",
        "Hello, world!\nWhat's up?" + _call("get_time", f"city:{Q}Paris{Q}"),
        [("get_time", {"city": "Paris"})],
        "Hello, world!\nWhat's up?",
        None,
    ),
    (
        "llamacpp/parallel",
        _call("get_time", f"city:{Q}London{Q}") + _call("get_weather", f"city:{Q}Paris{Q}"),
        [("get_time", {"city": "London"}), ("get_weather", {"city": "Paris"})],
        None,
        None,
    ),
    (
        "llamacpp/int",
        _call("special_function", "arg1:42"),
        [("special_function", {"arg1": 42})],
        None,
        None,
    ),
    (
        "llamacpp/negative",
        _call("special_function", "arg1:-7"),
        [("special_function", {"arg1": -7})],
        None,
        None,
    ),
    ("llamacpp/decimal", _call("amount", "orig:3.14"), [("amount", {"orig": 3.14})], None, None),
    (
        "llamacpp/scientific",
        _call("amount", "orig:1.5e10"),
        [("amount", {"orig": 1.5e10})],
        None,
        None,
    ),
    ("llamacpp/true", _call("toggle", "enabled:true"), [("toggle", {"enabled": True})], None, None),
    (
        "llamacpp/false",
        _call("toggle", "enabled:false"),
        [("toggle", {"enabled": False})],
        None,
        None,
    ),
    (
        "llamacpp/null",
        _call("set_nullable", "value:null"),
        [("set_nullable", {"value": None})],
        None,
        None,
    ),
    (
        "llamacpp/array",
        _call("todo_list", f"todos:[{Q}buy milk{Q},{Q}walk dog{Q}]"),
        [("todo_list", {"todos": ["buy milk", "walk dog"]})],
        None,
        None,
    ),
    (
        "llamacpp/object",
        _call("set_config", f"config:{{theme:{Q}dark{Q},count:3}}"),
        [("set_config", {"config": {"theme": "dark", "count": 3}})],
        None,
        None,
    ),
    (
        "llamacpp/empty_array",
        _call("todo_list", "todos:[]"),
        [("todo_list", {"todos": []})],
        None,
        None,
    ),
    (
        "llamacpp/empty_object",
        _call("set_config", "config:{}"),
        [("set_config", {"config": {}})],
        None,
        None,
    ),
    # vLLM tests/tool_parsers/test_gemma4_tool_parser.py
    (
        "vllm/no_call",
        "Hello, how can I help you today?",
        [],
        "Hello, how can I help you today?",
        None,
    ),
    (
        "vllm/multiple_arguments",
        _call("get_weather", f"location:{Q}San Francisco{Q},unit:{Q}celsius{Q}"),
        [("get_weather", {"location": "San Francisco", "unit": "celsius"})],
        None,
        None,
    ),
    (
        "vllm/text_before",
        "Let me check the weather for you. " + _call("get_weather", f"location:{Q}Paris{Q}"),
        [("get_weather", {"location": "Paris"})],
        "Let me check the weather for you. ",
        None,
    ),
    (
        "vllm/nested",
        _call("complex_function", f"nested:{{inner:{Q}value{Q}}},list:[{Q}a{Q},{Q}b{Q}]"),
        [("complex_function", {"nested": {"inner": "value"}, "list": ["a", "b"]})],
        None,
        None,
    ),
    (
        "vllm/number_and_boolean",
        _call("set_status", "is_active:true,count:42,score:3.14"),
        [("set_status", {"is_active": True, "count": 42, "score": 3.14})],
        None,
        None,
    ),
    (
        "vllm/hyphenated_name",
        _call("get-weather", f"location:{Q}London{Q}"),
        [("get-weather", {"location": "London"})],
        None,
        None,
    ),
    (
        "vllm/dotted_name",
        _call("weather.get", f"location:{Q}London{Q}"),
        [("weather.get", {"location": "London"})],
        None,
        None,
    ),
    (
        "vllm/comma_in_string",
        _call("f", f"location:{Q}Paris, France{Q}"),
        [("f", {"location": "Paris, France"})],
        None,
        None,
    ),
    (
        "vllm/quoted_dict_key",
        _call("f", f"record_map:{{{Q}3{Q}:{Q}new text{Q}}}"),
        [("f", {"record_map": {"3": "new text"}})],
        None,
        None,
    ),
    (
        "vllm/array_bracket_in_string",
        _call("f", f"a:[[{Q}a]b{Q},{Q}c{Q}],{Q}tail{Q}]"),
        [("f", {"a": [["a]b", "c"], "tail"]})],
        None,
        None,
    ),
    # vLLM tests/tool_parsers/test_gemma4_regex_and_bare_calls.py (output variations)
    (
        "vllm/turn_end_closes_call",
        f"<|tool_call>call:gdb{{args:{Q}-batch -ex run /tmp/poc{Q}}}<turn|>",
        [("gdb", {"args": "-batch -ex run /tmp/poc"})],
        None,
        None,
    ),
    (
        "vllm/sequential_with_newline",
        _call("read_file", f"path:{Q}/work/Makefile{Q}")
        + "\n"
        + _call("bash", f"command:{Q}make -j8{Q}"),
        [("read_file", {"path": "/work/Makefile"}), ("bash", {"command": "make -j8"})],
        None,
        None,
    ),
    (
        "vllm/bare_call_after_thought",
        "<|channel>thought\nI need to read the entry source file.\n<channel|>"
        f"call:bash{{command:{Q}cat /work/src/entry.c{Q}}}",
        [("bash", {"command": "cat /work/src/entry.c"})],
        None,
        "I need to read the entry source file.",
    ),
    (
        "vllm/colon_prefixed",
        f"<|tool_call>:call:bash{{command:{Q}pytest{Q}}}",
        [("bash", {"command": "pytest"})],
        None,
        None,
    ),
    (
        "vllm/trailing_dot_float",
        _call("f", "left:108.,right:22.8"),
        [("f", {"left": 108.0, "right": 22.8})],
        None,
        None,
    ),
    # vLLM tests/tool_parsers/test_gemma4_tool_parser.py (TestBareAndMalformedOpeners,
    # vLLM issue 53431): ``call`` dropped from the head
    (
        "vllm/bare_opener",
        f"<|tool_call>:get_weather{{location:{Q}Tokyo{Q},unit:{Q}celsius{Q}}}<tool_call|>",
        [("get_weather", {"location": "Tokyo", "unit": "celsius"})],
        None,
        None,
    ),
    (
        "vllm/bare_opener_empty_args",
        "<|tool_call>:set_status{}<tool_call|>",
        [("set_status", {})],
        None,
        None,
    ),
    (
        "vllm/colon_in_content",
        f"Hello: world<|tool_call>:get_weather{{location:{Q}London{Q}}}<tool_call|>",
        [("get_weather", {"location": "London"})],
        "Hello: world",
        None,
    ),
    ("vllm/no_arguments", "<|tool_call>call:get_time<tool_call|>", [("get_time", {})], None, None),
]


def _calls(msg: dict[str, Any]) -> Calls:
    out = []
    for call in msg.get("tool_calls") or ():
        assert "error" not in call, call
        out.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    return out


@pytest.mark.parametrize(("template", "reasoning"), [("gemma4", None), ("gemma4", "gemma4")])
@pytest.mark.parametrize(
    ("text", "calls", "content", "thought"),
    [c[1:] for c in PEER_CASES],
    ids=[c[0] for c in PEER_CASES],
)
def test_peer_cases(
    template: str,
    reasoning: str | None,
    text: str,
    calls: Calls,
    content: str | None,
    thought: str | None,
) -> None:
    """Whole and streamed, with the template's parsers and with the tool parser alone."""
    msg = assert_stream_equals_whole(text, template, parser="gemma4", reasoning_parser=reasoning)
    assert _calls(msg) == calls
    assert msg["content"] == content
    assert msg.get("reasoning_content") == thought


#: (id, output, expected (name, error or None, arguments text) per call, content)
POLICY: list[tuple[str, str, list[tuple[str, str | None, str]], str | None]] = [
    (
        "truncated_string",
        f"<|tool_call>call:get_weather{{location:{Q}London",
        [("get_weather", "truncated", f"location:{Q}London")],
        None,
    ),
    (
        "truncated_after_member",
        "<|tool_call>call:f{a:1,b:",
        [("f", "truncated", '{"a": 1,b:')],
        None,
    ),
    (
        "end_marker_in_arguments",
        "<|tool_call>call:f{a:1<tool_call|>after",
        [("f", "arguments end without '}'", "a:1")],
        "after",
    ),
    (
        "unterminated_list",
        "<|tool_call>call:f{a:[1,2}<tool_call|>",
        [("f", "arguments end without '}'", "a:[1,2}")],
        None,
    ),
    ("not_a_call", "<|tool_call>hello<tool_call|>x", [("", "not a tool call", "hello")], "x"),
    # vLLM's TestBareAndMalformedOpeners: a head that is not a name is a flagged call of that name
    (
        "head_not_a_name",
        "<|tool_call>:bad no brace<tool_call|>" + _call("search", f"input:{Q}hi{Q}"),
        [("bad no brace", "malformed call head", "{}"), ("search", None, '{"input": "hi"}')],
        None,
    ),
    ("head_cut_off", "<|tool_call>call:get_time", [("", "not a tool call", "call:get_time")], None),
    (
        "brace_after_a_broken_head",
        "<|tool_call>call:get time{a:1}<tool_call|>",
        [("", "not a tool call", "call:get time{a:1}")],
        None,
    ),
    (
        "missing_end_marker",
        "<|tool_call>call:f{a:1} and text",
        [("f", None, '{"a": 1}')],
        " and text",
    ),
    ("start_marker_at_end", "Text<|tool_call>", [], "Text"),
    (
        "bare_call_in_prose_is_text",
        f"some prose\ncall:bash{{command:{Q}ls{Q}}}",
        [],
        f"some prose\ncall:bash{{command:{Q}ls{Q}}}",
    ),
    (
        "bare_word_is_text",
        "<|tool_call>call:f{unit:celsius}<tool_call|>",
        [("f", None, '{"unit": "celsius"}')],
        None,
    ),
    (
        "stray_bracket",
        "<|tool_call>call:f{a:1],b:2}<tool_call|>",
        [("f", "argument 'a' does not read: unexpected text after a value: ']'", "a:1],b:2")],
        None,
    ),
]


@pytest.mark.parametrize(
    ("text", "calls", "content"), [c[1:] for c in POLICY], ids=[c[0] for c in POLICY]
)
def test_policy(text: str, calls: list[tuple[str, str | None, str]], content: str | None) -> None:
    msg = assert_stream_equals_whole(text, "gemma4")
    got = [
        (c["function"]["name"], c.get("error"), c["function"]["arguments"])
        for c in msg.get("tool_calls") or ()
    ]
    assert got == calls
    assert msg["content"] == content


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "book",
            "description": "Book a trip",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "note": {"type": "string"},
                },
            },
        },
    }
]


def test_unknown_tool_and_typed_strings() -> None:
    text = _call("book", f"days:{Q}3{Q},note:{Q}42{Q}") + _call("fly", "to:1")
    msg = assert_stream_equals_whole(text, "gemma4", tools=TOOLS)
    book, fly = msg["tool_calls"]
    assert json.loads(book["function"]["arguments"]) == {"days": 3, "note": "42"}
    assert fly["error"] == "unknown tool 'fly'"


def test_thoughts_between_calls_are_reasoning() -> None:
    text = (
        "<|channel>thought\nFirst the weather.<channel|>"
        + _call("book", f"city:{Q}Paris{Q}")
        + "<|channel>thought\nNow the trip.\n<channel|>"
        + _call("book", "days:2")
        + "Done."
    )
    msg = assert_stream_equals_whole(text, "gemma4", tools=TOOLS)
    assert msg["reasoning_content"] == "First the weather.\n\nNow the trip."
    assert msg["content"] == "Done."
    assert _calls(msg) == [("book", {"city": "Paris"}), ("book", {"days": 2})]


@pytest.mark.parametrize("text", [f"{Q}unterminated", "{a:1", "[1,2", "{:1}", "", "{a 1}", "[1]]"])
def test_gemma_value_refuses_broken_text(text: str) -> None:
    with pytest.raises(GemmaSyntaxError):
        gemma_value(text)


def test_templates_are_registered() -> None:
    tpl = chatfmt.get_template("google/gemma-4-31B-it")
    assert (tpl.name, tpl.tool_parser, tpl.reasoning_parser) == ("gemma4", "gemma4", "gemma4")
    assert end_of_turn_markers("gemma4") == ("<turn|>", "<|tool_response>", "<eos>")
    inter = chatfmt.get_template("gemma4-interleaved")
    assert (inter.tool_parser, inter.reasoning_parser) == ("gemma4", "gemma4")


ARGS = {
    "city": 'Paris, "the city of light" {not: a, dict} [x]',
    "days": 3,
    "ratio": -0.5,
    "flag": False,
    "none": None,
    "tags": ["a", "b, c", 1, True],
    "nested": {"k": {"deep": [1, {"x": "y"}]}, "empty": {}, "list": []},
    "text": "line 1\nline 2",
}
TURN = {
    "role": "assistant",
    "content": "Booking it.",
    "reasoning_content": "The user wants a trip.",
    "tool_calls": [
        {
            "id": "a",
            "type": "function",
            "function": {"name": "book", "arguments": json.dumps(ARGS)},
        },
        {"id": "b", "type": "function", "function": {"name": "book", "arguments": "{}"}},
    ],
}
_PREFILL = "<|channel>thought\n<channel|>"


@pytest.mark.parametrize("name", ["gemma4", "gemma4-interleaved"])
@pytest.mark.parametrize("thinking", [True, False])
def test_rendered_turn_parses_back(name: str, thinking: bool) -> None:
    """The official template's rendering of a turn (reasoning, calls with every value type,
    content) parses back to it; with thinking off the prompt ends with an empty thought
    block that the rendered turn does not have, so the model's output is the turn's body."""
    history = [{"role": "user", "content": "Plan a trip"}]
    prompt = chatfmt.render(history, name, tools=TOOLS, enable_thinking=thinking)
    full = chatfmt.render(
        [*history, TURN], name, tools=TOOLS, add_generation_prompt=False, enable_thinking=thinking
    )
    if not thinking:
        assert prompt.endswith(_PREFILL)
        prompt = prompt.removesuffix(_PREFILL)
    assert full.startswith(prompt)
    output = full[len(prompt) :]
    msg = assert_stream_equals_whole(output, name, tools=TOOLS, enable_thinking=thinking)
    assert _calls(msg) == [("book", ARGS), ("book", {})]
    assert msg["content"] == "Booking it."
    assert msg["reasoning_content"] == "The user wants a trip."


_STRINGS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12).filter(
    lambda s: Q not in s
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _STRINGS
)
_KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=6,
)


@given(st.dictionaries(_KEYS, _VALUES, max_size=4), st.integers(1, 9))
def test_template_written_calls_parse_back(args: dict[str, Any], chunk: int) -> None:
    """Any arguments the official template writes parse back to themselves, however cut."""
    history = [{"role": "user", "content": "q"}]
    turn = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "a",
                "type": "function",
                "function": {"name": "f", "arguments": json.dumps(args)},
            }
        ],
    }
    prompt = chatfmt.render(history, "gemma4", enable_thinking=True)
    full = chatfmt.render(
        [*history, turn], "gemma4", add_generation_prompt=False, enable_thinking=True
    )
    output = full[len(prompt) :]
    parts = [output[i : i + chunk] for i in range(0, len(output), chunk)]
    msg = merge_deltas(stream_deltas(parts, "gemma4", id_factory=call_ids, enable_thinking=True))
    assert msg == parse(output, "gemma4", id_factory=call_ids, enable_thinking=True)
    assert _calls(msg) == [("f", json.loads(json.dumps(args)))]


def test_deep_nesting_is_flagged_not_a_crash() -> None:
    text = "<|tool_call>call:f{a:" + "[" * 5000 + "]" * 5000 + "}<tool_call|>"
    msg = parse(text, "gemma4")
    (call,) = msg["tool_calls"]
    assert call["error"] == "argument 'a' does not read: nested too deeply"
