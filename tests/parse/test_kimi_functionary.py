"""Kimi-K2 / K2-Thinking / K3, Functionary v3.1 / v3.2, Llama 3.1 custom tool calls and
FireFunction v2: peer cases, the robustness policy and the template wiring (issue 14).

Every output is parsed whole and streamed in every chunking (``_streaming.chunkings``)
and the two must agree. Peer cases are data: their inputs and expected results, taken
from the cited peer test files (facts only; the checks are written here).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import chatfmt
from _streaming import assert_stream_equals_whole, decoded_calls
from chatfmt.jinja.packaged import PackagedTemplate
from chatfmt.parsing import end_of_turn_markers, parse

SB, SE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CB, AB, CE = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


def k2_call(name: str, idx: int, args: str) -> str:
    return f"{CB}functions.{name}:{idx}{AB}{args}{CE}"


def k3_open(tag: str) -> str:
    return f"<|open|>{tag}<|sep|>"


def k3_close(tag: str) -> str:
    return f"<|close|>{tag}<|sep|>"


Call = tuple[str, Any]  # (name, decoded arguments)


calls = decoded_calls


def check(
    text: str,
    template: str,
    content: str | None,
    expected: list[tuple[Any, ...]],
    reasoning: str | None = None,
    ids: list[str] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Whole ≡ every streaming; content (stripped; None ≡ ""), reasoning, calls, ids."""
    msg = assert_stream_equals_whole(text, template, **kwargs)
    assert ((msg["content"] or "").strip() or None) == content, msg
    assert msg.get("reasoning_content") == reasoning, msg
    assert calls(msg) == [(*c, None) if len(c) == 2 else c for c in expected], msg
    if ids is not None:
        assert [c["id"] for c in msg["tool_calls"]] == ids
    return msg


# ---------------------------------------------------------------- Kimi-K2 peer cases
# vLLM tests/tool_use/test_kimi_k2_tool_parser.py (test_extract_tool_calls and the
# no-tools / invalid-JSON cases): (id, output, content, calls as (name, arguments)).
VLLM_KIMI = [
    (
        "tool_call_with_content_before",
        f"I'll help you check the weather. {SB} {CB}\nfunctions.get_weather:0 {AB} "
        f'{{"city": "Beijing"}} {CE} {SE}',
        "I'll help you check the weather.",
        [("get_weather", {"city": "Beijing"})],
        ["functions.get_weather:0"],
    ),
    (
        "multi_tool_call_with_content_before",
        f"I'll help you check the weather. {SB} {CB}\nfunctions.get_weather:0 {AB} "
        f'{{"city": "Beijing"}} {CE} {CB}\nfunctions.get_weather:1 {AB} {{"city": "Shanghai"}} '
        f"{CE} {SE}",
        "I'll help you check the weather.",
        [("get_weather", {"city": "Beijing"}), ("get_weather", {"city": "Shanghai"})],
        ["functions.get_weather:0", "functions.get_weather:1"],
    ),
    (
        "concatenated_tool_calls_bug_fix",
        "I'll get the weather and news for LA today. "
        + SB
        + k2_call("get_weather", 0, '{"latitude": 34.0522, "longitude": -118.2437}')
        + k2_call("get_news", 1, '{"content": "Los Angeles today"}')
        + SE,
        "I'll get the weather and news for LA today.",
        [
            ("get_weather", {"latitude": 34.0522, "longitude": -118.2437}),
            ("get_news", {"content": "Los Angeles today"}),
        ],
        ["functions.get_weather:0", "functions.get_news:1"],
    ),
    (
        "three_concatenated_tool_calls",
        "I'll help you with multiple tasks. "
        + SB
        + k2_call("get_weather", 0, '{"city": "New York"}')
        + k2_call("get_news", 1, '{"topic": "technology"}')
        + k2_call("send_email", 2, '{"to": "user@example.com", "subject": "Daily Update"}')
        + SE,
        "I'll help you with multiple tasks.",
        [
            ("get_weather", {"city": "New York"}),
            ("get_news", {"topic": "technology"}),
            ("send_email", {"to": "user@example.com", "subject": "Daily Update"}),
        ],
        None,
    ),
    (
        "mixed_spacing_tool_calls",
        f"Mixed spacing test. {SB} {CB} functions.test:0 {AB} {{}} {CE}"
        f"{CB}functions.test2:1{AB}{{}}{CE} {SE}",
        "Mixed spacing test.",
        [("test", {}), ("test2", {})],
        ["functions.test:0", "functions.test2:1"],
    ),
    (
        "angle_brackets_in_json",
        "I need to process HTML content. "
        + SB
        + k2_call("process_html", 0, '{"html": "<div>content</div>", "text": "normal text"}')
        + SE,
        "I need to process HTML content.",
        [("process_html", {"html": "<div>content</div>", "text": "normal text"})],
        None,
    ),
    (
        "newlines_in_json",
        "I need to process formatted JSON. "
        + SB
        + k2_call(
            "process_data",
            0,
            '{\n  "name": "test",\n  "value": 123,\n  "nested": {\n    "key": "value"\n  }\n}',
        )
        + SE,
        "I need to process formatted JSON.",
        [("process_data", {"name": "test", "value": 123, "nested": {"key": "value"}})],
        None,
    ),
    ("no_tools", "This is a test", "This is a test", [], None),
]


@pytest.mark.parametrize(
    ("text", "content", "expected", "ids"),
    [case[1:] for case in VLLM_KIMI],
    ids=[case[0] for case in VLLM_KIMI],
)
def test_vllm_kimi_k2_cases(
    text: str, content: str, expected: list[Call], ids: list[str] | None
) -> None:
    check(text, "kimi_k2", content, expected, ids=ids)


def test_vllm_kimi_k2_invalid_json_and_invalid_call_id() -> None:
    # vLLM: both calls are returned (the first one's JSON is cut short by the end marker).
    text = (
        f"I'll help you check the weather. {SB} {CB}\nfunctions.invalid_get_weather:0 {AB} "
        f'{{"city": "Beijing" {CE} {CB}\nfunctions.valid_get_weather:1 {AB} '
        f'{{"city": "Shanghai"}} {CE} {SE}'
    )
    msg = check(
        text,
        "kimi_k2",
        "I'll help you check the weather.",
        [
            (
                "invalid_get_weather",
                '{"city": "Beijing" ',
                "invalid JSON arguments: unexpected '<'",
            ),
            ("valid_get_weather", {"city": "Shanghai"}),
        ],
    )
    assert msg["tool_calls"][1]["id"] == "functions.valid_get_weather:1"
    # vLLM drops a call whose id is not functions.NAME:IDX; here it is kept and flagged.
    text = text.replace("invalid_get_weather:0", "invalid_get_weather.0").replace(
        '"Beijing" ', '"Beijing"} '
    )
    msg = check(
        text,
        "kimi_k2",
        "I'll help you check the weather.",
        [
            ("invalid_get_weather.0", {"city": "Beijing"}, "call id is not functions.NAME:INDEX"),
            ("valid_get_weather", {"city": "Shanghai"}),
        ],
    )
    assert msg["tool_calls"][0]["id"] != "functions.invalid_get_weather.0"  # not a model id


# SGLang test/srt/function_call/test_kimik2_detector.py (KimiK2Detector): whole and
# marker-aligned / marker-splitting increments.
NESTED = {"path": "x.md", "content": "# T\n```py\nd={'k': 1}\n```\ndone } { more"}
SGLANG_KIMI = [
    (
        "detect_and_parse_single",
        "Let me help. " + SB + k2_call("execute_command", 0, '{"command": "ls"}') + SE,
        "Let me help.",
        [("execute_command", {"command": "ls"})],
    ),
    (
        "detect_and_parse_multiple",
        SB
        + k2_call("write_to_file", 0, '{"path": "a.txt", "content": "hi"}')
        + k2_call("execute_command", 1, '{"command": "ls"}')
        + SE,
        None,
        [
            ("write_to_file", {"path": "a.txt", "content": "hi"}),
            ("execute_command", {"command": "ls"}),
        ],
    ),
    (
        "nested_braces_not_truncated",
        SB + k2_call("write_to_file", 0, json.dumps(NESTED)) + SE,
        None,
        [("write_to_file", NESTED)],
    ),
    ("no_tool_call", "no tools here", "no tools here", []),
    (
        "stream_empty_args",
        SB + k2_call("execute_command", 0, "{}") + SE,
        None,
        [("execute_command", {})],
    ),
]


@pytest.mark.parametrize(
    ("text", "content", "expected"),
    [case[1:] for case in SGLANG_KIMI],
    ids=[case[0] for case in SGLANG_KIMI],
)
def test_sglang_kimi_k2_cases(text: str, content: str | None, expected: list[Call]) -> None:
    check(text, "kimi_k2", content, expected)


@pytest.mark.parametrize(
    "pieces",
    [
        [
            SB,
            CB,
            "functions.execute_command:0",
            AB,
            '{"command":',
            ' "ls"}',
            "<|tool_call_",
            "end|>",
            SE,
        ],
        [
            SB + CB + "functions.execute_command:0" + AB,
            '{"command": "ls"}',
            "<|tool",
            "_call",
            "_end|>",
            SE,
        ],
    ],
)
def test_sglang_kimi_k2_end_marker_split(pieces: list[str]) -> None:
    # The arguments are exactly the JSON: no fragment of a cut <|tool_call_end|> leaks in.
    msg = assert_stream_equals_whole("".join(pieces), "kimi_k2", extra=[pieces])
    assert msg["tool_calls"][0]["function"] == {
        "name": "execute_command",
        "arguments": '{"command": "ls"}',
    }
    assert msg["content"] is None


# llama.cpp tests/test-chat.cpp (Kimi-K2, Kimi-K2-Instruct, Kimi-K2-Thinking).
LLAMACPP_KIMI = [
    (
        "kimi-k2-0711",
        SB + k2_call("special_function", 0, '{"arg1": 1}') + SE,
        None,
        None,
        [("special_function", {"arg1": 1})],
    ),
    ("kimi-k2", "Hello, world!\nWhat's up?", "Hello, world!\nWhat's up?", None, []),
    (
        "kimi-k2",
        SB + k2_call("special_function", 0, '{"arg1": 1}') + SE,
        None,
        None,
        [("special_function", {"arg1": 1})],
    ),
    (
        "kimi-k2-thinking",
        "<think>I need to call two functions"
        + SB
        + k2_call("special_function", 0, '{"arg1": 1}')
        + k2_call("python", 1, '{"code": "print(\'hey\')"}')
        + SE,
        None,
        "I need to call two functions",
        [("special_function", {"arg1": 1}), ("python", {"code": "print('hey')"})],
    ),
    (  # calls inside the thinking block, without section or end markers
        "kimi-k2-thinking",
        "<think>I need to call two functions"
        f'{CB}functions.special_function:0{AB}{{"arg1": 1}}'
        f'{CB}functions.python:1{AB}{{"code": "print(\'hey\')"}}',
        None,
        "I need to call two functions",
        [("special_function", {"arg1": 1}), ("python", {"code": "print('hey')"})],
    ),
    (
        "kimi-k2-thinking",
        SB
        + k2_call("special_function", 0, '{"arg1": 1}')
        + k2_call("python", 1, '{"code": "print(1)"}')
        + k2_call("html", 2, '{"markup": "<p>test</p>"}')
        + SE,
        None,
        None,
        [
            ("special_function", {"arg1": 1}),
            ("python", {"code": "print(1)"}),
            ("html", {"markup": "<p>test</p>"}),
        ],
    ),
    (
        "kimi-k2-thinking",
        f'{CB}functions.execute_command:0{AB}{{"command": "ls -lah", '
        '"cwd": "/home/jarvis/development/exllamav3", "timeout": 10}',
        None,
        None,
        [
            (
                "execute_command",
                {"command": "ls -lah", "cwd": "/home/jarvis/development/exllamav3", "timeout": 10},
            )
        ],
    ),
]


@pytest.mark.parametrize(("template", "text", "content", "reasoning", "expected"), LLAMACPP_KIMI)
def test_llamacpp_kimi_cases(
    template: str, text: str, content: str | None, reasoning: str | None, expected: list[Call]
) -> None:
    msg = check(text, template, content, expected, reasoning)
    for call in msg.get("tool_calls") or ():  # the model's ids are the OpenAI ids
        assert call["id"].startswith("functions." + call["function"]["name"] + ":")


def test_llamacpp_kimi_partial_call_is_truncated() -> None:
    text = SB + CB + "functions.special_function:0" + AB + '{"arg1": '
    msg = check(text, "kimi-k2-thinking", None, [("special_function", '{"arg1": ', "truncated")])
    assert msg["tool_calls"][0]["id"] == "functions.special_function:0"
    assert parse(text, "kimi-k2", truncated=True).finish_reason == "length"


# ---------------------------------------------------------------- Kimi-K2 policy
@pytest.mark.parametrize(
    ("text", "content", "expected"),
    [
        # a header cut off at the end of output
        ("Hi " + SB + CB + "functions.get_wea", "Hi", [("get_wea", "", "truncated")]),
        # no argument marker before the call's end
        (SB + CB + "functions.f:0" + CE + SE, None, [("f", "", "no arguments")]),
        # text between the arguments and the end marker breaks the call
        (
            SB + k2_call("f", 0, '{"a": 1} oops') + SE + "after",
            "after",
            [("f", '{"a": 1} oops', "text after the arguments")],
        ),
        # arguments that are JSON but not an object
        (
            SB + k2_call("f", 0, "[1, 2]") + SE,
            None,
            [("f", [1, 2], "arguments are not a JSON object")],
        ),
        # text inside a section (not a call) is content; a stray section end is markup
        (SB + "let me think" + SE + " ok", "let me think ok", []),
        # the marker at the very end with nothing after it: markup
        ("Hello" + SB, "Hello", []),
        # the singular section spelling
        (
            "<|tool_call_section_begin|>" + k2_call("f", 0, "{}") + "<|tool_call_section_end|>",
            None,
            [("f", {})],
        ),
    ],
)
def test_kimi_k2_policy(text: str, content: str | None, expected: list[tuple[Any, ...]]) -> None:
    check(text, "kimi_k2", content, expected)


def test_kimi_k2_unknown_tool_is_flagged_when_tools_are_given() -> None:
    text = SB + k2_call("get_weather", 0, '{"city": "Paris"}') + k2_call("nope", 1, "{}") + SE
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    check(
        text,
        "moonshotai/Kimi-K2-Instruct",
        None,
        [("get_weather", {"city": "Paris"}), ("nope", {}, "unknown tool 'nope'")],
        tools=tools,
    )


def test_kimi_k2_thinking_round_trip_with_reasoning_and_calls() -> None:
    """The official template keeps reasoning on a turn with calls: it parses back."""
    turn = {
        "role": "assistant",
        "content": "Checking.",
        "reasoning_content": "Paris, so get_weather.",
        "tool_calls": [
            {
                "id": "functions.get_weather:0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    history = [{"role": "user", "content": "Weather in Paris?"}]
    prompt = chatfmt.render(history, "moonshotai/Kimi-K2-Thinking", add_generation_prompt=True)
    full = chatfmt.render(
        [*history, turn], "moonshotai/Kimi-K2-Thinking", add_generation_prompt=False
    )
    assert full.startswith(prompt)
    output = full[len(prompt) :]
    assert output.startswith("<think>Paris, so get_weather.</think>Checking.")
    msg = check(
        output,
        "moonshotai/Kimi-K2-Thinking",
        "Checking.",
        [("get_weather", {"city": "Paris"})],
        "Paris, so get_weather.",
        ids=["functions.get_weather:0"],
    )
    assert msg.finish_reason == "tool_calls"


# ---------------------------------------------------------------- Kimi-K3
def k3_turn(reasoning: str, content: str, *call_bodies: str) -> str:
    text = reasoning + k3_close("think") + k3_open("response") + content + k3_close("response")
    if call_bodies:
        text += k3_open("tools") + "".join(call_bodies) + k3_close("tools")
    return text + k3_close("message")


def k3_call(name: str, index: int, *args: tuple[str, str, str]) -> str:
    body = "".join(
        k3_open(f'argument key="{k}" type="{t}"') + v + k3_close("argument") for k, t, v in args
    )
    return k3_open(f'call tool="{name}" index="{index}"') + body + k3_close("call")


@pytest.mark.parametrize(
    ("text", "content", "reasoning", "expected"),
    [
        (
            k3_turn(
                "Two cities.",
                "Checking both.",
                k3_call("get_weather", 1, ("city", "string", "Paris"), ("days", "number", "2")),
                k3_call("get_weather", 2, ("city", "string", 'say "hi"\n<b>')),
            ),
            "Checking both.",
            "Two cities.",
            [
                ("get_weather", {"city": "Paris", "days": 2}),
                ("get_weather", {"city": 'say "hi"\n<b>'}),
            ],
        ),
        (  # every declared type; a value that is not of its type stays a string
            k3_turn(
                "",
                "",
                k3_call(
                    "f",
                    1,
                    ("b", "boolean", "true"),
                    ("n", "null", "null"),
                    ("o", "object", '{"k": [1]}'),
                    ("a", "array", "[1, 2]"),
                    ("x", "number", "many"),
                ),
            ),
            None,
            None,
            [("f", {"b": True, "n": None, "o": {"k": [1]}, "a": [1, 2], "x": "many"})],
        ),
        (  # escaped attributes; a call with a JSON object; a call without arguments
            k3_turn(
                "r",
                "",
                k3_open('call tool="a&amp;b" index="1"')
                + k3_open('argument key="say &quot;x&quot;" type="string"')
                + "v"
                + k3_close("argument")
                + k3_close("call"),
                k3_open('call tool="g" index="2"')
                + k3_open('json type="object"')
                + '{"q": "<|close|>"}'
                + k3_close("json")
                + k3_close("call"),
                k3_open('call tool="h" index="3"') + k3_close("call"),
            ),
            None,
            "r",
            [("a&b", {'say "x"': "v"}), ("g", {"q": "<|close|>"}), ("h", {})],
        ),
        (  # cut inside a value: truncated, the text so far kept
            "r"
            + k3_close("think")
            + k3_open("tools")
            + k3_open('call tool="f" index="1"')
            + k3_open('argument key="city" type="string"')
            + "Par",
            None,
            "r",
            [("f", '{"city": "Par', "truncated")],
        ),
        (  # text where an argument should be: the call is flagged with its raw text
            "r"
            + k3_close("think")
            + k3_open("tools")
            + k3_open('call tool="f" index="1"')
            + "oops"
            + k3_close("call")
            + k3_close("tools")
            + "after",
            "after",
            "r",
            [("f", "oops", "text in a call")],
        ),
    ],
)
def test_kimi_k3(
    text: str, content: str | None, reasoning: str | None, expected: list[Any]
) -> None:
    # The generation prompt opens the think tag (thinking is on by default).
    check(text, "moonshotai/Kimi-K3", content, expected, reasoning)


def test_kimi_k3_schema_types_an_argument_without_a_type() -> None:
    text = k3_turn(
        "",
        "",
        k3_open('call tool="get_weather" index="1"')
        + k3_open('argument key="days"')
        + "3"
        + k3_close("argument")
        + k3_close("call"),
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"days": {"type": "integer"}}},
            },
        }
    ]
    check(text, "kimi-k3", None, [("get_weather", {"days": 3})], tools=tools)
    check(text, "kimi-k3", None, [("get_weather", {"days": "3"})])


def test_kimi_k3_round_trip_with_thinking_off() -> None:
    turn = {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 2}'},
            }
        ],
    }
    history = [{"role": "user", "content": "Weather?"}]
    prompt = chatfmt.render(history, "kimi-k3", add_generation_prompt=True, thinking=False)
    full = chatfmt.render([*history, turn], "kimi-k3", add_generation_prompt=False, thinking=False)
    assert prompt.endswith(k3_open("response")) and full.startswith(prompt)
    out = full[len(prompt) :]
    msg = check(
        out, "kimi-k3", "Checking.", [("get_weather", {"city": "Paris", "days": 2})], thinking=False
    )
    assert msg.trailing_text == "" and msg.finish_reason == "tool_calls"


# ---------------------------------------------------------------- Functionary / Llama 3.1 / FireFunction
# llama.cpp tests/test-chat.cpp (Functionary v3.1 and v3.2, FireFunction v2, Llama 3.1).
SPECIAL = [("special_function", {"arg1": 1})]
PY_LINES = [("python", {"code": "# This is a program:\nprint('hey')"})]
LLAMACPP_FUNCTIONS = [
    ("functionary-v3.1", "Hello, world!\nWhat's up?", "Hello, world!\nWhat's up?", []),
    ("functionary-v3.1", '<function=special_function>{"arg1": 1}</function>', None, SPECIAL),
    # cut inside the end tag: a valid call; the cut tag is text (it is content here)
    ("functionary-v3.1", '<function=special_function>{"arg1": 1}<', "<", SPECIAL),
    ("functionary-v3.2", ">>>all\nHello, world!\nWhat's up?", "Hello, world!\nWhat's up?", []),
    ("functionary-v3.2", "all\nHello, world!\nWhat's up?", "Hello, world!\nWhat's up?", []),
    ("functionary-v3.2", '>>>special_function\n{"arg1": 1}', None, SPECIAL),
    ("functionary-v3.2", 'special_function\n{"arg1": 1} \n                    ', None, SPECIAL),
    (
        "functionary-v3.2",
        'all\nHello, world!\nnono\nWhat\'s up?>>>special_function\n{"arg1": 1}\n',
        "Hello, world!\nnono\nWhat's up?",
        SPECIAL,
    ),
    ("functionary-v3.2", "python\n# This is a program:\nprint('hey')", None, PY_LINES),
    ("firefunction-v2", "Hello, world!\nWhat's up?", "Hello, world!\nWhat's up?", []),
    (
        "firefunction-v2",
        ' functools[{"name": "special_function", "arguments": {"arg1": 1}}]',
        None,
        SPECIAL,
    ),
]


@pytest.mark.parametrize(("template", "text", "content", "expected"), LLAMACPP_FUNCTIONS)
def test_llamacpp_function_cases(
    template: str, text: str, content: str | None, expected: list[Call]
) -> None:
    check(text, template, content, expected)


@pytest.mark.parametrize(
    ("parser", "text", "content", "expected"),
    [
        # Llama 3.1 model card, user-defined custom tool calling
        (
            "llama3.1",
            '<function=spotify_trending_songs>{"n": "5"}</function><|eom_id|>',
            None,
            [("spotify_trending_songs", {"n": "5"})],
        ),
        (
            "llama3.1",
            'Sure. <function=f>{"a": 1}</function>\n<function=g>{}</function>',
            "Sure.",
            [("f", {"a": 1}), ("g", {})],
        ),
        ("llama3_json", "Use <function=a b> here", "Use <function=a b> here", []),
        (
            "llama3_json",
            '<function=f>{"a": bad}</function> then',
            "then",
            [("f", '{"a": bad}', "invalid JSON arguments: invalid literal 'bad'")],
        ),
        ("llama3_json", '<function=f>{"a": 1', None, [("f", '{"a": 1', "truncated")]),
        # the same machine in Functionary v3.1, and its python tag
        (
            "functionary_v31",
            '<|python_tag|>import os\nprint("a\\tb")',
            None,
            [("python", {"code": 'import os\nprint("a\\tb")'})],
        ),
        (
            "functionary_v31",
            '<|python_tag|>{"code": "1 + 1"}',
            None,
            [("python", {"code": "1 + 1"})],
        ),
        ("functionary_v31", "<function=get_wea", None, [("get_wea", "", "truncated")]),
        # Functionary v3.2: several segments, code up to the next one, a broken call
        (
            "functionary_v32",
            "python\nprint(1)>>>all\nDone.",
            "Done.",
            [("python", {"code": "print(1)"})],
        ),
        (
            "functionary_v32",
            'f\n{"a": x}>>>all\nok',
            "ok",
            [("f", '{"a": x}', "invalid JSON arguments: invalid literal 'x'")],
        ),
        ("functionary_v32", "Hello there", "Hello there", []),
        ("functionary_v32", "all\nQuote >>> this", "Quote >>> this", []),
        ("functionary_v32", 'f\n{"a": 1}\nThanks', "Thanks", [("f", {"a": 1})]),
        ("functionary_v32", 'all\nHi>>>f\n{"a": 1', "Hi", [("f", '{"a": 1', "truncated")]),
    ],
)
def test_function_tag_and_recipient_policy(
    parser: str, text: str, content: str | None, expected: list[tuple[Any, ...]]
) -> None:
    check(text, parser, content, expected)


def test_functionary_v32_prompt_prefills_the_arrow() -> None:
    prompt = chatfmt.render(
        [{"role": "user", "content": "q"}],
        "meetkai/functionary-small-v3.2",
        add_generation_prompt=True,
    )
    assert prompt.endswith(">>>")


# ---------------------------------------------------------------- wiring
@pytest.mark.parametrize(
    ("model", "name", "tool", "reasoning", "stop"),
    [
        ("moonshotai/Kimi-K2-Instruct", "kimi-k2", "kimi_k2", None, "<|im_end|>"),
        ("moonshotai/Kimi-K2-Instruct-0905", "kimi-k2-0905", "kimi_k2", None, "<|im_end|>"),
        ("moonshotai/Kimi-K2-Thinking", "kimi-k2-thinking", "kimi_k2", "kimi_k2", "<|im_end|>"),
        ("moonshotai/Kimi-K3", "kimi-k3", "kimi_k3", "kimi_k3", "<|end_of_msg|>"),
        (
            "meetkai/functionary-medium-v3.1",
            "functionary-v3.1",
            "functionary_v31",
            None,
            "<|eom_id|>",
        ),
        (
            "meetkai/functionary-small-v3.2",
            "functionary-v3.2",
            "functionary_v32",
            None,
            "<|eot_id|>",
        ),
        (
            "fireworks-ai/llama-3-firefunction-v2",
            "firefunction-v2",
            "firefunction_v2",
            None,
            "<|eot_id|>",
        ),
    ],
)
def test_model_ids_resolve_to_their_templates_and_parsers(
    model: str, name: str, tool: str, reasoning: str | None, stop: str
) -> None:
    tpl = chatfmt.get_template(model)
    assert (tpl.name, tpl.tool_parser, tpl.reasoning_parser) == (name, tool, reasoning)
    assert stop in end_of_turn_markers(tpl)


@pytest.mark.parametrize(
    ("file", "name"),
    [
        ("moonshotai-Kimi-K2.jinja", "kimi-k2-0711"),
        ("Kimi-K2-Thinking.jinja", "kimi-k2-thinking"),
        ("Kimi-K3.jinja", "kimi-k3"),
        ("meetkai-functionary-medium-v3.1.jinja", "functionary-v3.1"),
        ("meetkai-functionary-medium-v3.2.jinja", "functionary-v3.2"),
        ("fireworks-ai-llama-3-firefunction-v2.jinja", "firefunction-v2"),
    ],
)
def test_official_source_is_the_packaged_template(file: str, name: str) -> None:
    from chatfmt.jinja.packaged import packaged_for
    from chatfmt.jinja.recognize import official_source

    source = official_source(file)
    assert source is not None
    tpl = packaged_for(source)
    assert tpl is not None and tpl.name == name


def test_kimi_k2_marker_look_alike_is_prose_with_token_ids() -> None:
    ids = {SB: 163595, CB: 163597}
    text = "Quote " + SB + " here"
    prose = parse(text, "kimi-k2", token_ids=[1, 2, 3], special_token_ids=ids)
    assert prose == {"role": "assistant", "content": text}
    assert parse(text, "kimi-k2")["content"] == "Quote here"  # without ids: the marker counts


# ---------------------------------------------------------------- rendering facts of the packaged templates
def test_packaged_template_refuses_reasoning_its_official_file_drops() -> None:
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "reasoning_content": "r"},
    ]
    for name in ("kimi-k2", "functionary-v3.1", "functionary-v3.2", "firefunction-v2"):
        with pytest.raises(chatfmt.UnsupportedFeatureError) as info:
            chatfmt.render(msgs, name)
        assert (info.value.index, info.value.field) == (1, "reasoning_content")
    assert "<think>r</think>" in chatfmt.render(  # Kimi-K2-Thinking has a place for it
        [*msgs, {"role": "user", "content": "q2"}, {**msgs[1], "tool_calls": [CALL]}],
        "kimi-k2-thinking",
    )


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_assistant_turns_are_trained_through_their_end_of_turn_marker() -> None:
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    for name, end in (("kimi-k3", "<|end_of_msg|>"), ("kimi-k2", "<|im_end|>")):
        segs = chatfmt.get_template(name).segments(msgs, add_generation_prompt=False)
        trained = "".join(s.text for s in segs if s.trained)
        assert trained.endswith(end) and "a" in trained, name


def test_firefunction_fills_functions_from_tools() -> None:
    tool = {"type": "function", "function": {"name": "zq1v", "parameters": {}}}
    msgs = [{"role": "user", "content": "q"}]
    out = chatfmt.render(msgs, "firefunction-v2", tools=[tool])
    assert "Available functions as JSON spec:\n[\n  {\n" in out and '"zq1v"' in out
    given = chatfmt.render(msgs, "firefunction-v2", tools=[tool], functions="[mine]")
    assert "[mine]" in given and "zq1v" not in given
    segs = chatfmt.get_template("firefunction-v2").segments(msgs, tools=[tool])
    assert "".join(s.text for s in segs) == out
    # the reply (its calls too) is trained from the assistant header on
    reply = {"role": "assistant", "content": "", "tool_calls": [CALL]}
    segs = chatfmt.get_template("firefunction-v2").segments(
        [*msgs, reply], tools=[tool], add_generation_prompt=False
    )
    assert "".join(s.text for s in segs if s.trained).startswith(' functools[{"name": "f"')


def test_packaged_subclass_survives_pickling() -> None:
    import pickle

    tpl = chatfmt.get_template("firefunction-v2")
    copy = pickle.loads(pickle.dumps(tpl))
    assert type(copy) is type(tpl) and copy.name == tpl.name
    tool = {"type": "function", "function": {"name": "zq2v", "parameters": {}}}
    assert "zq2v" in copy.render([{"role": "user", "content": "q"}], tools=[tool])


def test_kimi_k3_think_tags_without_reasoning_parser_are_markup() -> None:
    text = k3_close("think") + k3_open("response") + "hello" + k3_close("response")
    check(text, "kimi-k3", "hello", [], thinking_prefilled=False)
    check(k3_open("think") + "r" + k3_close("think") + "a", "kimi_k3", "ra", [])


@pytest.mark.parametrize("tool_parser", ["plain", "kimi_k3"])
def test_kimi_k3_reasoning_parser_drops_the_answer_wrapper_with_any_tool_parser(
    tool_parser: str,
) -> None:
    # vLLM tests/reasoning/test_kimi_k3_reasoning_parser.py
    # (test_delegating_parser_strips_response_wrapper_without_tool_parser): an engine that
    # runs only the reasoning parser (no tools in the request) gets the answer unwrapped.
    kw = {"parser": tool_parser, "reasoning_parser": "kimi_k3"}
    check(k3_open("think") + k3_turn("step", "answer"), None, "answer", [], "step", **kw)
    check("answer" + k3_close("response") + k3_close("message"), None, "answer", [], **kw)


# ---------------------------------------------------------------- the native Kimi-K2-Instruct template
def _kimi_call(name: str, arguments: Any, k: int) -> dict[str, Any]:
    return {"id": f"c{k}", "type": "function", "function": {"name": name, "arguments": arguments}}


KIMI_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Wetter é",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
KIMI_CONVERSATIONS = [
    [],
    [{"role": "user", "content": "Hi"}],
    [
        {"role": "system", "content": "Sys"},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Yo"},
    ],
    [
        {"role": "user", "content": "Hi", "name": "bob"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                _kimi_call("get_weather", '{"city": "Paris"}', 1),
                _kimi_call("f", "{}", 2),
            ],
        },
        {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
        {"role": "tool", "content": "x", "tool_call_id": "c2"},
        {"role": "tool", "content": "extra", "name": "g"},
        {"role": "assistant", "content": "Done é"},
    ],
    [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {
            "role": "assistant",
            "content": "Let me.",
            "tool_calls": [_kimi_call("get_weather", {"city": "Lyon", "n": [1, 2]}, 1)],
        },
    ],
    [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_kimi_call("get_weather", '{"b": 1, "a": "é\\n"}', 1)],
        },
        {"role": "tool", "content": None, "tool_call_id": "c1"},
        {"role": "system", "content": "late"},
        {"role": "user", "content": "u2"},
    ],
]


@pytest.mark.parametrize("conversation", KIMI_CONVERSATIONS)
@pytest.mark.parametrize("tools", [None, [KIMI_WEATHER]])
@pytest.mark.parametrize("generation_prompt", [True, False])
def test_native_kimi_k2_renders_like_its_official_jinja(
    conversation: list[dict[str, Any]], tools: Any, generation_prompt: bool
) -> None:
    from chatfmt.jinja import JinjaTemplate
    from chatfmt.jinja.recognize import official_source

    source = official_source("Kimi-K2-Instruct.jinja")
    assert source is not None
    want = JinjaTemplate(source).render(
        conversation, tools=tools, add_generation_prompt=generation_prompt
    )
    for name in ("kimi-k2", "kimi-k2-0905"):
        native = chatfmt.get_template(name)
        assert not isinstance(native, PackagedTemplate)
        got = native.render(conversation, tools=tools, add_generation_prompt=generation_prompt)
        assert got == want
        segments = native.segments(
            conversation, tools=tools, add_generation_prompt=generation_prompt
        )
        assert "".join(seg.text for seg in segments) == want


def test_official_kimi_k2_source_is_recognized_as_the_native_template() -> None:
    from chatfmt.jinja import recognize
    from chatfmt.jinja.recognize import official_source

    source = official_source("Kimi-K2-Instruct.jinja")
    assert source is not None
    found = recognize(source)
    assert found.template is not None and found.template.name == "kimi-k2"
    assert not found.differs
