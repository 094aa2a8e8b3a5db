"""The ``<invoke>`` family (MiniMax-M2/M3, DeepSeek V3.2/V4 DSML, Muse Glimmer) and MiniMax-M1.

Peer cases are data (inputs and expected results taken from the peers' tests, cited per
table); every case is also checked stream ≡ whole over every chunking.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import chatfmt
from _streaming import assert_stream_equals_whole
from chatfmt.parsing import parse

NS = "]<]minimax[>["
FC, FC_END = "<｜DSML｜function_calls>", "</｜DSML｜function_calls>"
TC, TC_END = "<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>"
INV, INV_END = '<｜DSML｜invoke name="', "</｜DSML｜invoke>"
PAR, PAR_END = '<｜DSML｜parameter name="', "</｜DSML｜parameter>"


def tool(name: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"type": "object", "properties": properties or {}}
    return {"type": "function", "function": {"name": name, "parameters": params}}


def calls(msg: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in msg.get("tool_calls") or ()
    ]


def errors(msg: dict[str, Any]) -> list[str | None]:
    return [c.get("error") for c in msg.get("tool_calls") or ()]


def dsml(name: str, *params: tuple[str, str, str], wrapper: tuple[str, str] = (FC, FC_END)) -> str:
    body = "".join(f'{PAR}{k}" string="{s}">{v}{PAR_END}\n' for k, s, v in params)
    return f'{wrapper[0]}\n{INV}{name}">\n{body}{INV_END}\n{wrapper[1]}'


def mm2(name: str, **params: str) -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params.items())
    return f'<minimax:tool_call>\n<invoke name="{name}">\n{body}</invoke>\n</minimax:tool_call>'


# ------------------------------------------------------------------ peer cases
# (parser, output, tools, expected content, expected calls)
Case = tuple[str, str, list[dict[str, Any]] | None, str | None, list[tuple[str, Any]]]

TOGGLE = tool("toggle", {"enabled": {"type": "boolean"}, "count": {"type": "integer"}})
SCORE = tool("score", {"value": {"type": "integer"}})
TIMER = tool(
    "set_timer",
    {
        "wait": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        "patches": {"oneOf": [{"type": "array", "items": {"type": "object"}}, {"type": "null"}]},
    },
)
COERCE = tool(
    "coerce",
    {
        "union_value": {"type": ["null", "string"]},
        "bad_int": {"type": "integer"},
        "nullable_string": {"type": ["null", "string"]},
        "null_string": {"type": "string"},
        "whole_number": {"type": "number"},
    },
)
PROFILE = tool("update_profile", {"nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]}})
SETTINGS = tool("update_settings", {"config": {"anyOf": [{"type": "object"}, {"type": "null"}]}})

#: vLLM tests/tool_parsers/test_deepseekv32_tool_parser.py (DSML values; schema types win).
DSML_PEER: list[Case] = [
    ("deepseek_v32", "just some text", None, "just some text", []),
    ("deepseek_v32", f'{FC}\n{INV}get_time">\n{INV_END}\n{FC_END}', None, None, [("get_time", {})]),
    (
        "deepseek_v32",
        dsml("get_weather", ("location", "true", "SF"), ("date", "true", "2024-01-16")),
        None,
        None,
        [("get_weather", {"location": "SF", "date": "2024-01-16"})],
    ),
    (
        "deepseek_v32",
        "Sure, let me check! " + dsml("get_weather", ("location", "true", "NYC")),
        None,
        "Sure, let me check! ",
        [("get_weather", {"location": "NYC"})],
    ),
    (
        "deepseek_v32",
        dsml("toggle", ("enabled", "false", "true"), ("count", "false", "42")),
        [TOGGLE],
        None,
        [("toggle", {"enabled": True, "count": 42})],
    ),
    (
        "deepseek_v32",
        dsml("score", ("value", "true", "42")),
        [SCORE],
        None,
        [("score", {"value": 42})],
    ),
    (
        "deepseek_v32",
        dsml(
            "set_timer",
            ("wait", "false", '{"type":"for","minutes":2880}'),
            ("patches", "false", '[{"op":"replace","path":"/schedule","value":"quiet"}]'),
        ),
        [TIMER],
        None,
        [
            (
                "set_timer",
                {
                    "wait": {"type": "for", "minutes": 2880},
                    "patches": [{"op": "replace", "path": "/schedule", "value": "quiet"}],
                },
            )
        ],
    ),
    (
        "deepseek_v32",
        dsml("set_timer", ("wait", "true", '{"type":"for","minutes":2880}')),
        [TIMER],
        None,
        [("set_timer", {"wait": {"type": "for", "minutes": 2880}})],
    ),
    (
        "deepseek_v32",
        dsml(
            "coerce",
            ("union_value", "false", "hello"),
            ("bad_int", "false", "abc"),
            ("nullable_string", "false", "null"),
            ("null_string", "false", "null"),
            ("whole_number", "false", "3.0"),
        ),
        [COERCE],
        None,
        [
            (
                "coerce",
                {
                    "union_value": "hello",
                    "bad_int": "abc",
                    "nullable_string": None,
                    "null_string": "null",
                    "whole_number": 3,
                },
            )
        ],
    ),
    (
        "deepseek_v32",
        dsml("unknown_fn", ("count", "false", "42"), ("flag", "false", "true")),
        None,
        None,
        [("unknown_fn", {"count": 42, "flag": True})],
    ),
    (
        "deepseek_v32",
        f'{FC}\n{INV}func_a">\n{PAR}p" string="true">v1{PAR_END}\n{INV_END}\n'
        f'{INV}func_b">\n{PAR}q" string="true">v2{PAR_END}\n{INV_END}\n{FC_END}',
        None,
        None,
        [("func_a", {"p": "v1"}), ("func_b", {"q": "v2"})],
    ),
]

#: vLLM tests/tool_parsers/test_minimax_m2_tool_parser.py (no schema: values stay text).
MM2_PEER: list[Case] = [
    ("minimax_m2", "Hello world", None, "Hello world", []),
    (
        "minimax_m2",
        'Let me check. <minimax:tool_call><invoke name="get_weather">'
        '<parameter name="city">Seattle</parameter></invoke></minimax:tool_call>',
        None,
        "Let me check. ",
        [("get_weather", {"city": "Seattle"})],
    ),
    (
        "minimax_m2",
        '<minimax:tool_call><invoke name="get_weather"><parameter name="city">Seattle</parameter>'
        '<parameter name="days">5</parameter></invoke></minimax:tool_call>',
        None,
        None,
        [("get_weather", {"city": "Seattle", "days": "5"})],
    ),
    (
        "minimax_m2",
        '<minimax:tool_call><invoke name="fn_a"><parameter name="x">1</parameter></invoke>'
        '<invoke name="fn_b"><parameter name="y">2</parameter></invoke></minimax:tool_call>',
        None,
        None,
        [("fn_a", {"x": "1"}), ("fn_b", {"y": "2"})],
    ),
    (
        "minimax_m2",
        '<minimax:tool_call><invoke name="update_profile">'
        '<parameter name="nickname">null</parameter></invoke></minimax:tool_call>',
        [PROFILE],
        None,
        [("update_profile", {"nickname": None})],
    ),
    (
        "minimax_m2",
        '<minimax:tool_call><invoke name="update_profile">'
        '<parameter name="nickname">Alice</parameter></invoke></minimax:tool_call>',
        [PROFILE],
        None,
        [("update_profile", {"nickname": "Alice"})],
    ),
    (
        "minimax_m2",
        '<minimax:tool_call><invoke name="update_settings"><parameter name="config">'
        '{"theme": "dark", "fontSize": 14}</parameter></invoke></minimax:tool_call>',
        [SETTINGS],
        None,
        [("update_settings", {"config": {"theme": "dark", "fontSize": 14}})],
    ),
]

ORDER = tool(
    "create_order",
    {
        "user_id": {"type": "integer"},
        "urgent": {"type": "boolean"},
        "note": {"type": "string"},
        "shipping": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
        },
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            },
        },
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "duplicate_demo": {"type": "object"},
    },
)
ORDER_CALL = (
    f"{NS}<tool_call>\n"
    f'{NS}<invoke name="create_order">'
    f"{NS}<user_id>42{NS}</user_id>{NS}<urgent>true{NS}</urgent>"
    f"{NS}<note>Please leave at front desk.{NS}</note>"
    f"{NS}<shipping>{NS}<city>Singapore{NS}</city>{NS}<zip>018956{NS}</zip>{NS}</shipping>"
    f"{NS}<items>{NS}<item>{NS}<sku>book-001{NS}</sku>{NS}<qty>2{NS}</qty>{NS}</item>"
    f"{NS}<item>{NS}<sku>pen-007{NS}</sku>{NS}<qty>5{NS}</qty>{NS}</item>{NS}</items>"
    f"{NS}<metadata>{NS}<source>mobile{NS}</source>{NS}<campaign>may-launch{NS}</campaign>"
    f"{NS}</metadata>"
    f"{NS}<duplicate_demo>{NS}<tag>a{NS}</tag>{NS}<tag>b{NS}</tag>{NS}</duplicate_demo>"
    f"{NS}</invoke>\n{NS}</tool_call>"
)
#: vLLM tests/tool_parsers/test_minimax_m3_tool_parser.py (nested elements, schema types).
MM3_PEER: list[Case] = [
    (
        "minimax_m3",
        "I will create it.\n" + ORDER_CALL,
        [ORDER],
        "I will create it.\n",
        [
            (
                "create_order",
                {
                    "user_id": 42,
                    "urgent": True,
                    "note": "Please leave at front desk.",
                    "shipping": {"city": "Singapore", "zip": 18956},
                    "items": [{"sku": "book-001", "qty": 2}, {"sku": "pen-007", "qty": 5}],
                    "metadata": {"source": "mobile", "campaign": "may-launch"},
                    "duplicate_demo": {"tag": ["a", "b"]},
                },
            )
        ],
    ),
    (
        "minimax_m3",
        f"{NS}<tool_call>\n"
        + "\n".join(
            f'{NS}<invoke name="create_order">{NS}<user_id>{k}{NS}</user_id>{NS}</invoke>'
            for k in (1, 2)
        )
        + f"\n{NS}</tool_call>",
        [ORDER],
        None,
        [("create_order", {"user_id": 1}), ("create_order", {"user_id": 2})],
    ),
    ("minimax_m3", "plain response", [ORDER], "plain response", []),
    ("minimax_m3", f"plain {NS}<tool_ca", [ORDER], f"plain {NS}<tool_ca", []),
]

WEATHER = tool("get_current_weather", {"city": {"type": "string"}, "state": {"type": "string"}})
#: vLLM tests/tool_parsers/test_minimax_tool_parser.py (MiniMax-M1 JSON lines).
MM1_PEER: list[Case] = [
    ("minimax_m1", "This is a test", None, "This is a test", []),
    (
        "minimax_m1",
        '<tool_calls>\n{"name": "get_current_weather", "arguments": {"city": "Dallas", '
        '"state": "TX", "unit": "fahrenheit"}}\n{"name": "get_current_weather", "arguments": '
        '{"city": "Orlando", "state": "FL", "unit": "fahrenheit"}}\n</tool_calls>',
        None,
        None,
        [
            ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}),
            ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}),
        ],
    ),
    (
        "minimax_m1",
        'I\'ll help you check the weather. <tool_calls>\n{"name": "get_current_weather", '
        '"arguments": {"city": "Seattle", "state": "WA", "unit": "celsius"}}\n</tool_calls>',
        None,
        "I'll help you check the weather. ",
        [("get_current_weather", {"city": "Seattle", "state": "WA", "unit": "celsius"})],
    ),
    (  # the closing tag is missing: the complete object is a valid call
        "minimax_m1",
        '<tool_calls>\n{"name": "get_current_weather", "arguments": {"city": "Boston", '
        '"state": "MA"}}',
        None,
        None,
        [("get_current_weather", {"city": "Boston", "state": "MA"})],
    ),
    (  # a multi-line object is a call too (vLLM's line-based parser finds none)
        "minimax_m1",
        '<tool_calls>\n{\n  "name": "get_current_weather",\n  "arguments": {\n    "city": '
        '"New York"\n  }\n}\n</tool_calls>',
        None,
        None,
        [("get_current_weather", {"city": "New York"})],
    ),
]

PEER_CASES = DSML_PEER + MM2_PEER + MM3_PEER + MM1_PEER


@pytest.mark.parametrize(
    ("parser", "text", "tools", "content", "expected"),
    PEER_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(PEER_CASES)],
)
def test_peer_cases(
    parser: str, text: str, tools: Any, content: str | None, expected: list[Any]
) -> None:
    msg = assert_stream_equals_whole(text, parser=parser, tools=tools)
    assert msg["content"] == content
    assert calls(msg) == expected
    assert errors(msg) == [None] * len(expected)


def test_m1_reasoning_tool_calls_are_reasoning() -> None:
    # vLLM test_extract_tool_calls_with_thinking_tags: calls inside <think> are not calls.
    text = (
        '<think>I should use a tool. <tool_calls>\n{"name": "ignored_tool", "arguments": {}}\n'
        "</tool_calls></think>\n\nLet me help you with the weather. <tool_calls>\n"
        '{"name": "get_current_weather", "arguments": {"city": "Miami", "state": "FL"}}\n'
        "</tool_calls>"
    )
    msg = assert_stream_equals_whole(text, "minimax-m1")
    assert "ignored_tool" in msg["reasoning_content"]
    assert msg["content"] == "Let me help you with the weather. "
    assert calls(msg) == [("get_current_weather", {"city": "Miami", "state": "FL"})]


# ------------------------------------------------------------------ values
@pytest.mark.parametrize(
    ("attr", "schema", "text", "value"),
    [
        ("true", None, "42", "42"),  # text, no schema: kept
        ("false", None, "42", 42),  # string="false": JSON
        ("false", None, '{"a": [1, 2]}', {"a": [1, 2]}),
        ("false", None, "not json", "not json"),  # not JSON: the text
        ("true", {"type": "string"}, " padded ", " padded "),  # never stripped
        ("false", {"type": "string"}, "null", "null"),  # the schema wins
        ("true", {"type": "number"}, "2.5", 2.5),
        ("true", {"type": "array"}, "[1, 'a']", [1, "a"]),  # Python literal accepted
        ("false", {"description": "untyped"}, "true", True),  # no declared type: attribute
    ],
)
def test_dsml_string_attribute_and_schema(attr: str, schema: Any, text: str, value: Any) -> None:
    tools = [tool("f", {"v": schema})] if schema is not None else None
    msg = parse(dsml("f", ("v", attr, text)), parser="deepseek_v32", tools=tools)
    assert calls(msg) == [("f", {"v": value})]


def test_values_keep_markup_and_newlines() -> None:
    text = mm2("write", path="a.py", body='if x < 3:\n    print("<invoke name=\\"y\\">")\n')
    msg = assert_stream_equals_whole(text, parser="minimax_m2")
    assert calls(msg) == [
        ("write", {"path": "a.py", "body": 'if x < 3:\n    print("<invoke name=\\"y\\">")\n'})
    ]


def test_attribute_quoting_and_dotted_names() -> None:
    text = (
        "<minimax:tool_call><invoke name='ns.tool-1'><parameter name=k.x>1</parameter>"
        "</invoke></minimax:tool_call>"
    )
    assert calls(assert_stream_equals_whole(text, parser="minimax_m2")) == [
        ("ns.tool-1", {"k.x": "1"})
    ]


@pytest.mark.parametrize(
    ("schema", "inner", "value"),
    [
        ({"type": "array"}, "", []),
        ({"type": "object"}, "", {}),
        (None, f"{NS}<item>1{NS}</item>{NS}<item>2{NS}</item>", ["1", "2"]),
        ({"type": "array", "items": {"type": "integer"}}, f"{NS}<x>1{NS}</x>", [1]),
        ({"type": "object"}, f"{NS}<item>1{NS}</item>", {"item": "1"}),
        # a nested element named like the parameter
        (None, f"{NS}<p>{NS}<p>z{NS}</p>{NS}</p>", {"p": {"p": "z"}}),
        (None, f"text {NS}<a>1{NS}</a>", f"text {NS}<a>1{NS}</a>"),  # mixed: the text
    ],
)
def test_m3_element_values(schema: Any, inner: str, value: Any) -> None:
    text = f'{NS}<tool_call>\n{NS}<invoke name="f">{NS}<p>{inner}{NS}</p>{NS}</invoke>\n{NS}</tool_call>'
    tools = [tool("f", {"p": schema})] if schema is not None else None
    msg = assert_stream_equals_whole(text, parser="minimax_m3", tools=tools)
    assert calls(msg) == [("f", {"p": value})]


# ------------------------------------------------------------------ robustness
def test_truncated_value_is_flagged_with_raw_text() -> None:
    text = dsml("f", ("a", "true", "1"))
    cut = text[: text.index("</｜DSML｜parameter>")]  # cut inside the value
    msg = assert_stream_equals_whole(cut, parser="deepseek_v32")
    assert errors(msg) == ["truncated"]
    raw = msg["tool_calls"][0]["function"]["arguments"]
    assert raw.endswith('<｜DSML｜parameter name="a" string="true">1')


@pytest.mark.parametrize("parser", ["minimax_m2", "deepseek_v32"])
def test_cut_closing_tag_completes_the_call(parser: str) -> None:
    text = mm2("f", a="1") if parser == "minimax_m2" else dsml("f", ("a", "true", "1"))
    for cut_at in ("</parameter>", "</｜DSML｜parameter>", "</invoke>", "</｜DSML｜invoke>"):
        at = text.find(cut_at)
        if at < 0:
            continue
        cut = text[: at + 4]
        msg = assert_stream_equals_whole(cut, parser=parser)
        assert calls(msg) == [("f", {"a": "1"})]
        assert errors(msg) == [None]
        assert msg["content"] == cut_at[:4]  # the cut tag is text, not dropped


def test_truncated_header_and_bare_wrapper() -> None:
    msg = assert_stream_equals_whole(
        'Hi <minimax:tool_call>\n<invoke name="get_w', parser="minimax_m2"
    )
    assert (msg["content"], errors(msg)) == ("Hi ", ["truncated"])
    assert msg["tool_calls"][0]["function"]["arguments"] == '<invoke name="get_w'
    msg = assert_stream_equals_whole("Hi <minimax:tool_call>\n", parser="minimax_m2")
    assert msg == {"role": "assistant", "content": "Hi "}  # the wrapper alone is markup


def test_broken_invoke_does_not_swallow_the_next() -> None:
    text = (
        '<minimax:tool_call>\n<invoke name="f">\n<bogus>\n</invoke>\n'
        '<invoke name="g">\n<parameter name="a">1</parameter>\n</invoke>\n</minimax:tool_call>'
        " after"
    )
    msg = assert_stream_equals_whole(text, parser="minimax_m2")
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["f", "g"]
    assert errors(msg) == ["malformed invoke parameters", None]
    assert "<bogus>" in msg["tool_calls"][0]["function"]["arguments"]
    assert msg["content"] == " after"


def test_stray_text_in_wrapper_and_nameless_invoke_are_flagged() -> None:
    text = f"{TC}\nsorry\n{INV_END}\n{TC_END}ok"
    msg = assert_stream_equals_whole(text, parser="deepseek_v4")
    assert errors(msg) == ["not a tool call"]
    assert "sorry" in msg["tool_calls"][0]["function"]["arguments"]
    assert msg["content"] == "ok"
    msg = assert_stream_equals_whole(
        f"{TC}\n<｜DSML｜invoke>\n{INV_END}\n{TC_END}", parser="deepseek_v4"
    )
    assert errors(msg) == ["no tool name"]


def test_unknown_tool_is_flagged() -> None:
    msg = parse(mm2("nope", a="1"), parser="minimax_m2", tools=[tool("f")])
    assert errors(msg) == ["unknown tool 'nope'"]
    assert calls(msg) == [("nope", {"a": "1"})]


def test_v4_wrapper_and_v32_wrapper_with_either_name() -> None:
    v4 = dsml("f", ("a", "false", "1"), wrapper=(TC, TC_END))
    for parser in ("deepseek_v32", "deepseek_v4"):
        assert calls(parse(v4, parser=parser)) == [("f", {"a": 1})]
        assert calls(parse(dsml("f", ("a", "false", "1")), parser=parser)) == [("f", {"a": 1})]


@pytest.mark.parametrize("end", [TC_END, FC_END, ""])
def test_dsml_invoke_without_the_wrappers_opening_tag(end: str) -> None:
    """vLLM tests/tool_parsers/test_deepseekv4_tool_parser.py
    (test_missing_tool_calls_wrapper_is_recovered, vLLM issue 48931): the model dropped the
    wrapper's opening tag; either closing tag is markup, text after the calls is content."""
    invoke = dsml("search", ("query", "true", "vllm"), wrapper=("", "")).strip()
    text = "Looking.\n" + invoke + "\n" + invoke + "\n" + end + "\nDone."
    msg = assert_stream_equals_whole(text, None, parser="deepseek_v4")
    assert calls(msg) == [("search", {"query": "vllm"})] * 2
    assert errors(msg) == [None, None]
    # as with the wrapper; without a closing tag the whitespace after the last invoke is text
    assert msg["content"] == ("Looking.\n\nDone." if end else "Looking.\n\n\nDone.")


# ------------------------------------------------------------------ Muse Glimmer segments
GLIMMER_TOOLS = [tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})]
ATEM = (
    '<atem:function_calls>\n<atem:invoke name="get_weather">\n'
    '<atem:parameter name="city">Paris</atem:parameter>\n'
    '<atem:parameter name="days">2</atem:parameter>\n</atem:invoke>\n</atem:function_calls>'
)


@pytest.mark.parametrize(
    ("text", "content", "reasoning", "expected"),
    [
        (" to=user<|message|>Hello", "Hello", None, []),
        (
            " to=self<|message|>Think.<|eom|><|start|>assistant to=user<|message|>Hi",
            "Hi",
            "Think.",
            [],
        ),
        (
            f" to=self<|message|>Think.<|eom|><|start|>assistant to=get_weather<|message|>{ATEM}",
            None,
            "Think.",
            [("get_weather", {"city": "Paris", "days": 2})],
        ),
        ("Plain text, no header", "Plain text, no header", None, []),
        ("assistant to be", "assistant to be", None, []),
        ("<|message|>no recipient", "no recipient", None, []),
    ],
)
def test_glimmer_segments(
    text: str, content: str | None, reasoning: str | None, expected: Any
) -> None:
    msg = assert_stream_equals_whole(text, "muse-glimmer", tools=GLIMMER_TOOLS)
    assert (msg["content"], msg.get("reasoning_content"), calls(msg)) == (
        content,
        reasoning,
        expected,
    )


# ------------------------------------------------------------------ templates, options, model ids
WEATHER_TOOLS = [tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})]
CALL_TURN = {
    "role": "assistant",
    "content": "Let me check.",
    "reasoning_content": "The user wants Paris.",
    "tool_calls": [
        {
            "id": "c0",
            "type": "function",
            "function": {
                "name": "get_weather",
                "arguments": json.dumps({"city": "Paris", "days": 2}),
            },
        }
    ],
}
USER = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("deepseek-v3.2", {"thinking": True}),
        ("deepseek-v4", {"thinking": True}),
        ("deepseek-v4-flash-0731", {"thinking": True, "reasoning_effort": "high"}),
        ("minimax-m3", {"thinking_mode": "enabled"}),
        ("minimax-m3", {}),
    ],
)
def test_thinking_round_trip(name: str, options: dict[str, Any]) -> None:
    tpl = chatfmt.get_template(name)
    prompt = tpl.render(USER, add_generation_prompt=True, tools=WEATHER_TOOLS, **options)
    full = tpl.render([*USER, CALL_TURN], tools=WEATHER_TOOLS, **options)
    assert full.startswith(prompt)
    msg = assert_stream_equals_whole(full[len(prompt) :], name, tools=WEATHER_TOOLS, **options)
    assert (msg["content"].strip(), msg["reasoning_content"].strip()) == (
        "Let me check.",
        "The user wants Paris.",
    )
    assert calls(msg) == [("get_weather", {"city": "Paris", "days": 2})]


def test_v32_thinking_off_output() -> None:
    # Thinking off, the prompt ends with "<think></think>": the model writes the answer.
    tpl = chatfmt.get_template("deepseek-v3.2")
    full = tpl.render([*USER, {**CALL_TURN, "reasoning_content": None}], tools=WEATHER_TOOLS)
    out = full.split("<｜Assistant｜></think>", 1)[1]
    msg = assert_stream_equals_whole(out, "deepseek-v3.2", tools=WEATHER_TOOLS)
    # the text before the block is content; the "\n\n" before it is the template's own
    # separator, which it writes again when the message is rendered back
    assert msg["content"] == "Let me check."
    back = tpl.render([*USER, msg], tools=WEATHER_TOOLS, add_generation_prompt=False)
    assert back == full
    assert calls(msg) == [("get_weather", {"city": "Paris", "days": 2})]
    assert msg.finish_reason == "tool_calls"


def test_m3_nested_arguments_round_trip() -> None:
    order = {
        "user_id": 7,
        "urgent": False,
        "shipping": {"city": "Oslo", "zip": 150},
        "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 3}],
    }
    turn = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c0",
                "type": "function",
                "function": {"name": "create_order", "arguments": json.dumps(order)},
            }
        ],
    }
    tpl = chatfmt.get_template("minimax-m3")
    prompt = tpl.render(USER, add_generation_prompt=True, tools=[ORDER])
    full = tpl.render([*USER, turn], tools=[ORDER])
    msg = parse(full[len(prompt) :], "minimax-m3", tools=[ORDER])
    assert calls(msg) == [("create_order", order)]


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("MiniMaxAI/MiniMax-M1-80k", "minimax-m1"),
        ("MiniMaxAI/MiniMax-M2", "minimax-m2"),
        ("MiniMaxAI/MiniMax-M3", "minimax-m3"),
        ("deepseek-ai/DeepSeek-V3.2", "deepseek-v3.2"),
        ("deepseek-ai/DeepSeek-V4-Flash", "deepseek-v4"),
        ("deepseek-ai/DeepSeek-V4-Flash-0731", "deepseek-v4-flash-0731"),
    ],
)
def test_model_ids_resolve_to_their_template_and_parsers(model: str, name: str) -> None:
    tpl = chatfmt.get_template(model)
    assert tpl.name == name
    assert tpl.generation_config.stop_words  # the end-of-turn marker is known


def test_parse_by_model_id() -> None:
    text = "<think>\nhmm\n</think>\n\n" + mm2("get_weather", city="Paris", days="2") + "[e~[\nuser"
    msg = chatfmt.parse(text, "MiniMaxAI/MiniMax-M2", tools=WEATHER_TOOLS, thinking_prefilled=False)
    assert (msg.get("reasoning_content"), calls(msg)) == (
        "hmm",
        [("get_weather", {"city": "Paris", "days": 2})],
    )
    assert msg.trailing_text == "user"
    # M2's prompt opens <think>: the default parse is prefilled
    msg = chatfmt.parse("hmm\n</think>\n\nHi[e~[", "MiniMaxAI/MiniMax-M2")
    assert (msg["content"], msg["reasoning_content"]) == ("Hi", "hmm")


def test_m3_bare_think_close_is_markup() -> None:
    msg = assert_stream_equals_whole("</mm:think>Hello", "minimax-m3")
    assert msg == {"role": "assistant", "content": "Hello"}
    msg = assert_stream_equals_whole("<mm:think>plan</mm:think>Hello", "minimax-m3")
    assert (msg["content"], msg["reasoning_content"]) == ("Hello", "plan")


SHORT_OUTPUTS = {
    "minimax_m2": "Hi " + mm2("f", a="1", b="x y"),
    "deepseek_v32": dsml("f", ("a", "false", "[1]"), ("b", "true", "x")),
    "minimax_m3": (
        f'{NS}<tool_call>\n{NS}<invoke name="f">{NS}<p>{NS}<item>1{NS}</item>{NS}</p>'
        f"{NS}<q>x{NS}</q>{NS}</invoke>\n{NS}</tool_call>"
    ),
    "glimmer": f" to=self<|message|>t<|eom|><|start|>assistant to=f<|message|>{ATEM}",
}


@pytest.mark.parametrize("parser", sorted(SHORT_OUTPUTS))
def test_every_prefix_streams_like_whole(parser: str) -> None:
    """Output cut anywhere (truncation): stream ≡ whole, and an open call is flagged or complete."""
    text = SHORT_OUTPUTS[parser]
    for end in range(1, len(text) + 1, 3):
        msg = assert_stream_equals_whole(text[:end], parser=parser)
        for call in msg.get("tool_calls") or ():
            if "error" not in call:
                json.loads(call["function"]["arguments"])


def test_m3_cut_inside_a_nested_value_is_truncated() -> None:
    cut = ORDER_CALL[: ORDER_CALL.index("018956") + 8]  # "…<zip>018956]<" inside <shipping>
    msg = parse(cut, parser="minimax_m3", tools=[ORDER])
    assert errors(msg) == ["truncated"]


# llama.cpp tests/test-chat.cpp (test_minimax_m2_parser): the template "minimax-m2" (its prompt
# opens <think>, so the output starts inside the reasoning), tool `special_function(arg1: int)`.
SPECIAL = [
    tool("special_function", {"arg1": {"type": "integer"}}),
    tool("special_function_with_opt", {"arg1": {"type": "integer"}, "arg2": {"type": "integer"}}),
]
_MM2_CALL = (
    '<minimax:tool_call>\n<invoke name="special_function">\n<parameter name="arg1">1</parameter>\n'
    "</invoke>\n</minimax:tool_call>"
)
_HELLO = "Hello, world!\nWhat's up?"
LLAMA_CPP_MM2 = [
    # (output, prefilled, content, reasoning, calls)
    (_HELLO, False, _HELLO, None, []),
    ("I'm\nthinking</think>" + _HELLO, True, _HELLO, "I'm\nthinking", []),
    (_MM2_CALL, False, None, None, [("special_function", {"arg1": 1})]),
    (
        "I'm\nthinking</think>" + _MM2_CALL,
        True,
        None,
        "I'm\nthinking",
        [("special_function", {"arg1": 1})],
    ),
    (_MM2_CALL + _HELLO, False, _HELLO, None, [("special_function", {"arg1": 1})]),
    (
        "I'm\nthinking\n</think>\n\n" + _HELLO + "\n\n" + _MM2_CALL + "\n",
        True,
        _HELLO,
        "I'm\nthinking",
        [("special_function", {"arg1": 1})],
    ),
    (
        '<minimax:tool_call>\n<invoke name="special_function_with_opt">\n<parameter name="arg1">1'
        '</parameter>\n<parameter name="arg2">2</parameter>\n</invoke>\n</minimax:tool_call>',
        False,
        None,
        None,
        [("special_function_with_opt", {"arg1": 1, "arg2": 2})],
    ),
    (
        '<minimax:tool_call><invoke name="special_function"><parameter name="arg1">1</parameter>'
        "</invoke></minimax:tool_call>",
        False,
        None,
        None,
        [("special_function", {"arg1": 1})],
    ),
]


@pytest.mark.parametrize(("text", "prefilled", "content", "reasoning", "expected"), LLAMA_CPP_MM2)
def test_llama_cpp_minimax_m2_cases(
    text: str, prefilled: bool, content: str | None, reasoning: str | None, expected: Any
) -> None:
    msg = assert_stream_equals_whole(
        text, "minimax-m2", tools=SPECIAL, thinking_prefilled=prefilled
    )
    assert ((msg["content"] or "").strip() or None, msg.get("reasoning_content"), calls(msg)) == (
        content,
        reasoning,
        expected,
    )


def test_invoke_parser_factory_for_other_markers() -> None:
    from chatfmt.parsing.base import Emitter
    from chatfmt.parsing.invoke import invoke_parser
    from chatfmt.parsing.special import SpecialTokens

    cls = invoke_parser("fc", ("<function_calls>", "</function_calls>"))
    out = Emitter(
        lambda i: f"c{i}", {"f": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    )
    parser = cls(out, SpecialTokens(), {})
    text = 'Go <function_calls>\n<invoke name="f">\n<parameter name="n">3</parameter>\n</invoke>\n</function_calls>'
    for ch in text:
        parser.feed(ch)
    parser.finish()
    out.end()
    msg = chatfmt.merge_deltas(out.take())
    assert (msg["content"], calls(msg)) == ("Go ", [("f", {"n": 3})])


STRING_TOOL = [
    tool("test_func", {"content": {"type": "string"}}),
    tool("context_info", {"metadata_only": {"type": "boolean"}}),
]
#: SGLang: TestMinimaxM2DetectorBugs (MinimaxM2Detector tests for sglang issue 16057, values).
SGLANG_MM2 = [
    (
        '<minimax:tool_call><invoke name="test_func"><parameter name="content">This text contains '
        "</parameter> in it</parameter></invoke></minimax:tool_call>",
        None,
        [("test_func", {"content": "This text contains </parameter> in it"})],
    ),
    (
        '<minimax:tool_call><invoke name="test_func"><parameter name="content"><div>Hello</div>'
        "</parameter></invoke></minimax:tool_call>",
        None,
        [("test_func", {"content": "<div>Hello</div>"})],
    ),
    (  # no closing tags: the complete parameters make a valid call, no markup leaks
        '[Pasted ~4 lines]<minimax:tool_call><invoke name="context_info"><parameter '
        'name="metadata_only">false</parameter></invoke>',
        "[Pasted ~4 lines]",
        [("context_info", {"metadata_only": False})],
    ),
    (
        'Here is some text.<minimax:tool_call><invoke name="context_info"><parameter '
        'name="metadata_only">true</parameter></invoke></minimax:tool_call>More text after.',
        "Here is some text.More text after.",
        [("context_info", {"metadata_only": True})],
    ),
]


@pytest.mark.parametrize(("text", "content", "expected"), SGLANG_MM2)
def test_sglang_minimax_m2_cases(text: str, content: str | None, expected: Any) -> None:
    msg = assert_stream_equals_whole(text, parser="minimax_m2", tools=STRING_TOOL)
    assert (msg["content"], calls(msg), errors(msg)) == (content, expected, [None] * len(expected))


def test_special_token_look_alikes_are_text() -> None:
    # With token ids, a <minimax:tool_call> spelled by ordinary tokens is prose.
    ids = {"<minimax:tool_call>": 200052, "</minimax:tool_call>": 200053}
    text = mm2("f", a="1")
    quoted = parse(text, parser="minimax_m2", token_ids=[1, 2, 3], special_token_ids=ids)
    assert (quoted["content"], quoted.get("tool_calls")) == (text, None)
    real = parse(text, parser="minimax_m2", token_ids=[200052, 5, 200053], special_token_ids=ids)
    assert calls(real) == [("f", {"a": "1"})]


def test_malformed_invoke_tag_is_flagged_not_truncated() -> None:
    msg = parse("<minimax:tool_call><invoked>x</minimax:tool_call>", parser="minimax_m2")
    assert errors(msg) == ["no tool name"]
    assert msg["tool_calls"][0]["function"]["arguments"] == "<invoked>x"
