"""Pythonic tool calls (``pythonic``, ``llama4_pythonic``, ``lfm2``) and Jamba ``<tool_calls>``.

Peer cases are data taken from the peers' tests (files cited per block); every case is
also streamed in every chunking (``_streaming.chunkings``) and must equal the whole parse.
Policy cases pin chatfmt's choices where peers differ (never drop text, flag what breaks).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _pythonic_cases import (
    LFM_END,
    LFM_START,
    PEER_CASES,
    Calls,
    lfm_block,
)
from _streaming import assert_stream_equals_whole, call_ids, stream_deltas, wire
from chatfmt.parsing import StreamParser, merge_deltas, parse
from chatfmt.parsing.literals import NotLiteral, python_literal


def _calls(msg: dict[str, Any]) -> Calls:
    out = []
    for call in msg.get("tool_calls") or ():
        assert "error" not in call, call
        out.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    return out


@pytest.mark.parametrize(
    ("parser", "text", "calls", "content"),
    [c[1:] for c in PEER_CASES],
    ids=[c[0] for c in PEER_CASES],
)
def test_peer_cases(parser: str, text: str, calls: Calls, content: str | None) -> None:
    msg = assert_stream_equals_whole(text, parser)
    assert _calls(msg) == calls
    assert msg["content"] == content


#: (id, parser, output, expected (name, error or None, arguments text) per call, content).
POLICY: list[tuple[str, str, str, list[tuple[str, str | None, str]], str | None]] = [
    # a "[" that does not open "name(key=" / "name()" is prose
    (
        "prose_bracket",
        "pythonic",
        "[1] see the docs [x] and [f(a=1), g()] after",
        [("f", None, '{"a": 1}'), ("g", None, "{}")],
        "[1] see the docs [x] and  after",
    ),
    ("prose_positional", "pythonic", "[see('Tokyo')] is prose", [], "[see('Tokyo')] is prose"),
    ("prose_equality", "pythonic", "[f(a==1)]", [], "[f(a==1)]"),
    # SGLang drops these calls; chatfmt keeps them, flagged, with their raw text
    (
        "no_value",
        "pythonic",
        "[get_weather(city=)]",
        [("get_weather", "argument 'city' has no value", "city=")],
        None,
    ),
    (
        "positional_after_key",
        "pythonic",
        "[f(a=1, 'x')]",
        [("f", "positional argument \"'x'\"", "{\"a\": 1, 'x'")],
        None,
    ),
    # vLLM rejects the bad sibling and keeps the good one; chatfmt flags it (never executed)
    (
        "bytes_value",
        "pythonic",
        "[bad(x=b'z'), get_weather(city='LA')]",
        [
            ("bad", "argument 'x' is not a literal: \"b'z'\"", "x=b'z'"),
            ("get_weather", None, '{"city": "LA"}'),
        ],
        None,
    ),
    (
        "non_finite",
        "pythonic",
        "[calc(x=1e999)]",
        [("calc", "argument 'x' is not a literal: '1e999'", "x=1e999")],
        None,
    ),
    (
        "mismatched_bracket",
        "pythonic",
        "[foo(x=1])]",
        [("foo", "argument 'x' is not a literal: '1]'", "x=1]")],
        None,
    ),
    (
        "fstring",
        "pythonic",
        "[f(a=f'{x}')]",
        [("f", "argument 'a' is not a literal: \"f'{x}'\"", "a=f'{x}'")],
        None,
    ),
    (
        "name_value",
        "pythonic",
        "[f(a=1, b=secret, c=2)]",
        [("f", "argument 'b' is not a literal: 'secret'", '{"a": 1, b=secret, c=2')],
        None,
    ),
    # truncation: the call so far, flagged, raw text kept
    (
        "truncated",
        "pythonic",
        "[get_weather(city='LA",
        [("get_weather", "truncated", "city='LA")],
        None,
    ),
    ("truncated_after_arg", "pythonic", "[f(a=1, b=", [("f", "truncated", '{"a": 1, b=')], None),
    (
        "truncated_lfm2",
        "lfm2",
        f"{LFM_START}[special_function(arg1=",
        [("special_function", "truncated", "arg1=")],
        None,
    ),
    # a cut list after a complete call: the call is valid
    ("list_cut_after_call", "pythonic", "[f(a=1)", [("f", None, '{"a": 1}')], None),
    # inside a marker block, what is not a call is a flagged call with its raw text
    (
        "block_junk",
        "lfm2",
        f"{LFM_START}hello{LFM_END}ok",
        [("", "not a tool call", "hello")],
        "ok",
    ),
    (
        "block_json",
        "lfm2",
        f'{LFM_START}[{{"name": "f", "arguments": {{"a": 1}}}}]{LFM_END}',
        [("f", None, '{"a": 1}')],
        None,
    ),
    # after a call, text that does not go on with calls is content, comma and spaces included
    ("list_then_prose", "pythonic", "[f(a=1), 5] tail", [("f", None, '{"a": 1}')], ", 5] tail"),
    ("call_then_words", "pythonic", "[f(a=1) oops]", [("f", None, '{"a": 1}')], " oops]"),
    (
        "block_call_then_junk",
        "lfm2",
        f"{LFM_START}[f(a=1) , 5]{LFM_END}z",
        [("f", None, '{"a": 1}'), ("", "not a tool call", ", 5]")],
        "z",
    ),
    # vLLM hides an echoed call body after the block (test_lfm2_tool_parser.py
    # test_echoed_tool_call_body_not_leaked_to_content); chatfmt never drops text: it is content
    (
        "lfm2_echoed_body",
        "lfm2",
        f"{LFM_START}[f(a=1)]{LFM_END}[f(a=1)]{LFM_END}",
        [("f", None, '{"a": 1}')],
        f"[f(a=1)]{LFM_END}",
    ),
    # outside blocks LFM2 writes prose: a bare list is content
    ("lfm2_bare_list", "lfm2", "[f(a=1)]", [], "[f(a=1)]"),
    (
        "jamba_broken",
        "jamba",
        '<tool_calls>[{"name": "f", "arguments": {"a": 1</tool_calls>x',
        [("f", "invalid JSON in 'arguments'", '{"a": 1')],
        "x",
    ),
]


@pytest.mark.parametrize(
    ("parser", "text", "calls", "content"), [c[1:] for c in POLICY], ids=[c[0] for c in POLICY]
)
def test_policy(
    parser: str, text: str, calls: list[tuple[str, str | None, str]], content: str | None
) -> None:
    msg = assert_stream_equals_whole(text, parser)
    got = [
        (c["function"]["name"], c.get("error"), c["function"]["arguments"])
        for c in msg.get("tool_calls") or ()
    ]
    if parser == "jamba":  # the JSON scanner's message names the position: compare its start
        got = [(n, e.split(":")[0] if e else e, a) for n, e, a in got]
    assert got == calls
    assert msg["content"] == content


def test_unknown_tool_is_flagged_with_its_arguments() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    msg = assert_stream_equals_whole(
        "[search(q='x'), get_weather(city='LA')]", "pythonic", tools=tools
    )
    first, second = msg["tool_calls"]
    assert first["error"] == "unknown tool 'search'"
    assert json.loads(first["function"]["arguments"]) == {"q": "x"}
    assert "error" not in second


def test_a_call_is_never_executed(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[Any] = []
    monkeypatch.setattr(os, "system", lambda cmd: ran.append(cmd))
    text = "[run(cmd=__import__('os').system('x')), g(a=eval('1+1'), b=open('/etc/passwd').read())]"
    msg = assert_stream_equals_whole(text, "pythonic")
    assert ran == []
    run, g = msg["tool_calls"]
    assert run["error"].startswith("argument 'cmd' is not a literal")
    assert run["function"]["arguments"] == "cmd=__import__('os').system('x')"
    assert g["error"].startswith("argument 'a' is not a literal")
    assert "open('/etc/passwd')" in g["function"]["arguments"]


@pytest.mark.parametrize(
    "src",
    [
        "__import__('os')",
        "x",
        "1 + 1",
        "f'{x}'",
        "b'z'",
        "1e999",
        "{**a}",
        "[*a]",
        "(lambda: 1)()",
        "a.b",
    ],
)
def test_python_literal_refuses_what_is_not_a_literal(src: str) -> None:
    with pytest.raises(NotLiteral):
        python_literal(src)


@pytest.mark.parametrize(
    ("src", "value"),
    [
        ("'a'", "a"),
        ("-3", -3),
        ("+2.5", 2.5),
        ("007", 7),
        ("(1, 2)", [1, 2]),
        ("{1: True, 'k': None}", {"1": True, "k": None}),
        ('{"a": true, "b": null, "c": false}', {"a": True, "b": None, "c": False}),
    ],
)
def test_python_literal_reads_literals(src: str, value: Any) -> None:
    assert python_literal(src) == value


def test_name_streams_first_then_each_argument() -> None:
    sp = StreamParser("pythonic", id_factory=call_ids)
    assert wire(sp.feed("Sure. [get_weather(")) == [{"content": "Sure."}]  # " ": held
    assert sp.feed("city") == []  # a key or a positional name: undecided
    head = wire(sp.feed("='"))
    assert head[0] == {"content": " "}  # the held whitespace, content: no template separator
    assert head[1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": ""}
    assert sp.feed("Paris'") == []  # the value may still go on
    assert wire(sp.feed(", days=2")) == [
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"'}}]}
    ]
    assert wire(sp.feed(")]")) == [
        {"tool_calls": [{"index": 0, "function": {"arguments": ', "days": 2}'}}]}
    ]


def test_long_argument_is_not_rescanned() -> None:
    """The parser keeps only undecided text: a long string argument does not pile up in its buffer."""
    sp = StreamParser("lfm2")
    deltas = sp.feed(LFM_START + "[write(path='a.txt', text='")
    for _ in range(2000):
        deltas += sp.feed("lorem ipsum, dolor ")
        assert len(sp._parser.buf) - sp._parser.pos < 64
    deltas += sp.feed("')]" + LFM_END) + sp.finish()
    msg = merge_deltas(deltas)
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {
        "path": "a.txt",
        "text": "lorem ipsum, dolor " * 2000,
    }


def test_lfm_templates_are_registered_with_their_parsers() -> None:
    for model_id, name in [
        ("LiquidAI/LFM2-8B-A1B", "lfm2"),
        ("LiquidAI/LFM2.5-8B-A1B", "lfm2.5-moe"),
        ("LiquidAI/LFM2.5-1.2B-Instruct", "lfm2.5"),
    ]:
        tpl = chatfmt.get_template(model_id)
        assert (tpl.name, tpl.tool_parser, tpl.reasoning_parser) == (name, "lfm2", "think")
        assert tpl.generation_config.stop_words == ("<|im_end|>",)


LFM25_ARGS = {
    "query": "it's a 'quoted' test, isn't it",
    "flag": True,
    "options": {"a": None, "b": [1, 2.5], "c": False},
    "tags": ["x", "y z"],
    "ratio": 0.25,
    "nothing": None,
    "code": "line 1\nline 2\ttab",
}


def test_lfm25_rendered_calls_parse_back() -> None:
    """The LFM2.5 template writes strings in single quotes without escaping, dicts as JSON and
    other values with Jinja's ``string``: all of it parses back to the arguments."""
    history = [{"role": "user", "content": "q"}]
    turn = {
        "role": "assistant",
        "content": "On it.",
        "tool_calls": [
            {
                "id": "a",
                "type": "function",
                "function": {"name": "search", "arguments": json.dumps(LFM25_ARGS)},
            },
            {"id": "b", "type": "function", "function": {"name": "noop", "arguments": "{}"}},
        ],
    }
    prompt = chatfmt.render(history, "lfm2.5-moe")
    full = chatfmt.render([*history, turn], "lfm2.5-moe", add_generation_prompt=False)
    assert full.startswith(prompt)
    msg = parse(full[len(prompt) :], "lfm2.5-moe")
    assert msg["content"] == "On it."
    assert _calls(msg) == [("search", LFM25_ARGS), ("noop", {})]
    deltas = stream_deltas(list(full[len(prompt) :]), "lfm2.5-moe", id_factory=call_ids)
    assert merge_deltas(deltas) == parse(full[len(prompt) :], "lfm2.5-moe", id_factory=call_ids)


def test_lfm2_reasoning_then_call() -> None:
    # llama.cpp tests/test-chat.cpp: LFM2-8B-A1B with enable_thinking
    text = "<think>I need to call a function</think>Let me check the time." + lfm_block(
        'get_time(city="Paris")'
    )
    msg = assert_stream_equals_whole(text, "lfm2")
    assert msg["reasoning_content"] == "I need to call a function"
    assert msg["content"] == "Let me check the time."
    assert _calls(msg) == [("get_time", {"city": "Paris"})]


_JSON_SCALARS = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.text(max_size=12)
_JSON = st.recursive(
    _JSON_SCALARS | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)


@given(st.dictionaries(_KEYS, _JSON, max_size=4), st.integers(1, 7))
def test_python_written_calls_parse_back(args: dict[str, Any], chunk: int) -> None:
    """Any call Python's ``repr`` writes parses back to its arguments, however it is cut."""
    text = "[f(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + "), g()]"
    parts = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    msg = merge_deltas(stream_deltas(parts, "pythonic", id_factory=call_ids))
    assert msg == parse(text, "pythonic", id_factory=call_ids)
    assert _calls(msg) == [("f", json.loads(json.dumps(args))), ("g", {})]


def test_deep_nesting_is_flagged_not_a_crash() -> None:
    text = "[f(a=" + "[" * 5000 + "]" * 5000 + ")]"
    msg = parse(text, "pythonic")
    (call,) = msg["tool_calls"]
    assert call["error"].startswith("argument 'a' is not a literal")
    assert call["function"]["arguments"] == text[3:-2]
