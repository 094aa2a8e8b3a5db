"""chatfmt.parsing: family formats, policies, token ids, and stream == whole for any chunking."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _streaming import assert_stream_equals_whole, wire
from chatfmt.errors import ParseError
from chatfmt.parsing import Delta, ParsedMessage, StreamParser, merge_deltas, parse
from chatfmt.parsing.json_stream import JsonScanner

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TOOLS = [WEATHER]


def ids(index: int) -> str:
    return f"call_{index}"


def run(parser: str, text: str, **kw: Any) -> dict[str, Any]:
    return parse(text, parser=parser, id_factory=ids, **kw)


def calls(msg: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for c in msg.get("tool_calls", []):
        if c["type"] == "code_interpreter":
            out.append(("<code>", c["code_interpreter"]["input"]))
        else:
            out.append((c["function"]["name"], json.loads(c["function"]["arguments"])))
    return out


#: (parser, model output, expected content, expected calls) for every family.
EXAMPLES: list[tuple[str, str, str | None, list[tuple[str, Any]]]] = [
    (
        "internlm2",
        'Plot.<|action_start|><|interpreter|>\n```python\nprint("a`b")\n```<|action_end|>',
        "Plot.",
        [("<code>", 'print("a`b")')],
    ),
    (
        "internlm2",
        'A<|action_start|>\n<|plugin|>\n{"name": "get_weather", "parameters": {"city": "P"}}<|action_end|>B<|action_start|><|plugin|>{"name": "get_weather", "parameters": {}}<|action_end|>',
        "AB",
        [("get_weather", {"city": "P"}), ("get_weather", {})],
    ),
    (
        "chatglm3",
        'get_weather\n ```python\ntool_call(city="Bei\'jing", days=3, opts={"a": [1, (2, 3)]}, flag=True, none=None)\n```',
        None,
        [
            (
                "get_weather",
                {
                    "city": "Bei'jing",
                    "days": 3,
                    "opts": {"a": [1, [2, 3]]},
                    "flag": True,
                    "none": None,
                },
            )
        ],
    ),
    ("chatglm3", "\n Hello there.\nSecond line", "Hello there.\nSecond line", []),
    ("chatglm3", "interpreter\n```python\nx = 1\n```", None, [("<code>", "x = 1")]),
    (
        "chatglm3",
        "Okay.\n<|assistant|>get_weather\n```python\ntool_call(city='a, b)')\n```",
        "Okay.",
        [("get_weather", {"city": "a, b)"})],
    ),
    ("glm4", 'get_weather\n{"city": "Paris"}', None, [("get_weather", {"city": "Paris"})]),
    ("glm4", "\nJust text.", "Just text.", []),
    (
        "glm45",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>a </tool_call> b</arg_value>\n</tool_call>",
        None,
        [("get_weather", {"city": "a </tool_call> b"})],
    ),
    (
        "deepseek_v3",
        'Hi<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "P"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        "Hi",
        [("get_weather", {"city": "P"})],
    ),
    (
        "deepseek_v31",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "P"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "R"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        None,
        [("get_weather", {"city": "P"}), ("get_weather", {"city": "R"})],
    ),
    (
        "command_r",
        '<|START_THINKING|>Look.<|END_THINKING|><|START_ACTION|>[\n {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "P"}}\n]<|END_ACTION|>',
        None,
        [("get_weather", {"city": "P"})],
    ),
    (
        "command_r",
        'Action:\n```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters": {"city": "P"}\n    }\n]```',
        None,
        [("get_weather", {"city": "P"})],
    ),
    (
        "command_r",
        "<|START_RESPONSE|>Action: none needed.<|END_RESPONSE|>",
        "Action: none needed.",
        [],
    ),
    (
        "granite",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "P"}}, {"name": "get_weather", "arguments": {"city": "R"}}]',
        None,
        [("get_weather", {"city": "P"}), ("get_weather", {"city": "R"})],
    ),
    (
        "granite",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "P"}}\n</tool_call>',
        None,
        [("get_weather", {"city": "P"})],
    ),
    (
        "phi4",
        'functools[{"name": "get_weather", "arguments": {"city": "P"}}]',
        None,
        [("get_weather", {"city": "P"})],
    ),
    (
        "llama3_json",
        '<|python_tag|>brave_search.call(query="x y")',
        None,
        [("brave_search", {"query": "x y"})],
    ),
    (
        "llama3_json",
        "<|python_tag|>import math\nprint(1)",
        None,
        [("<code>", "import math\nprint(1)")],
    ),
    (
        "llama3_json",
        'A set {1, 2} and {"name": "Bob", "age": 3} are prose.',
        'A set {1, 2} and {"name": "Bob", "age": 3} are prose.',
        [],
    ),
    (
        "hermes",
        'x<tool_call>{"name": "get_weather", "arguments": {"city": "}</tool_call>{"}}</tool_call>',
        "x",
        [("get_weather", {"city": "}</tool_call>{"})],
    ),
    (
        "mistral",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "P"}',
        None,
        [("get_weather", {"city": "P"})],
    ),
    ("think", "<think>\nhmm\n</think>\n\nAnswer", "Answer", []),
]


@pytest.mark.parametrize(("parser", "text", "content", "expected"), EXAMPLES)
def test_family_examples(
    parser: str, text: str, content: str | None, expected: list[tuple[str, Any]]
) -> None:
    msg = run(parser, text)
    assert msg["content"] == content or (msg["content"] or "").strip() == content
    assert calls(msg) == expected
    assert all("error" not in c for c in msg.get("tool_calls", []))


def _stream(parser: str, chunks: list[str], **kw: Any) -> ParsedMessage:
    sp = StreamParser(parser=parser, id_factory=ids, **kw)
    deltas = [d for c in chunks for d in sp.feed(c)] + sp.finish()
    return merge_deltas(deltas)


@settings(max_examples=40)
@given(case=st.sampled_from(EXAMPLES), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_stream_equals_parse_random_splits(
    case: tuple[str, str, Any, Any], cuts: list[int]
) -> None:
    parser, text = case[0], case[1]
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    assert _stream(parser, chunks) == run(parser, text)


@pytest.mark.parametrize("case", EXAMPLES, ids=[f"{c[0]}-{i}" for i, c in enumerate(EXAMPLES)])
def test_stream_equals_parse_every_chunking(case: tuple[str, str, Any, Any]) -> None:
    """Whole, 1/4-character, random and every single cut (see ``_streaming.chunkings``)."""
    parser, text = case[0], case[1]
    assert_stream_equals_whole(text, parser=parser)


def test_argument_deltas_are_the_models_text() -> None:
    args = '{"city" :  "Paris",\n "n": [1, 2.50e1]}'
    text = '<tool_call>{"name": "get_weather", "arguments": ' + args + "}</tool_call>"
    sp = StreamParser(parser="hermes", id_factory=ids)
    pieces = []
    for ch in text:
        for d in wire(sp.feed(ch)):
            for tc in d.get("tool_calls", []):
                pieces.append(tc.get("function", {}).get("arguments", ""))
    sp.finish()
    assert "".join(pieces) == args


def test_reasoning_options() -> None:
    assert run("think", "thinking only", thinking_prefilled=True) == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "thinking only",
    }
    assert parse("Answer", "qwen3", enable_thinking=False)["content"] == "Answer"
    msg = parse(
        "\n<think>plan</think>\nText<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>P</arg_value>\n</tool_call>",
        "glm4.5",
        tools=TOOLS,
    )
    assert msg["reasoning_content"] == "plan" and msg["content"] == "Text"
    assert calls(msg) == [("get_weather", {"city": "P"})]
    # a template whose generation prompt ends with <think>: output starts inside thinking
    assert (
        parse("why\n</think>\n\nBecause.", "qwq", enable_thinking=True)["reasoning_content"]
        == "why"
    )
    # QwQ's reference template closes the block by default: the output is the answer
    assert parse("Because.", "qwq") == {"role": "assistant", "content": "Because."}


def test_policies_unknown_tool_malformed_truncated() -> None:
    msg = run("hermes", '<tool_call>{"name": "nope", "arguments": {}}</tool_call>', tools=TOOLS)
    assert msg["tool_calls"][0]["error"] == "unknown tool 'nope'"
    msg = run(
        "hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": tru}}</tool_call>after'
    )
    call = msg["tool_calls"][0]
    assert "error" in call and call["function"]["arguments"] == '{"city": tru}}'
    assert msg["content"] == "after"
    msg = run("hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": "Par')
    assert msg["tool_calls"][0]["error"] == "truncated"
    assert msg["tool_calls"][0]["function"]["arguments"] == '{"city": "Par'
    msg = run("hermes", "<tool_call>no json here</tool_call>")
    assert msg["tool_calls"][0]["function"] == {"name": "", "arguments": "no json here"}
    assert msg["content"] is None


def test_token_ids_tell_lookalikes_from_special_tokens() -> None:
    special = {"<tool_call>": 151657, "</tool_call>": 151658}
    prose = 'Write "<tool_call>" to call.'
    sp = StreamParser(parser="hermes", special_token_ids=special, id_factory=ids)
    deltas = sp.feed(prose, token_ids=[1, 2, 3, 4, 5]) + sp.finish()
    assert merge_deltas(deltas) == {"role": "assistant", "content": prose}
    sp = StreamParser(parser="hermes", special_token_ids=special, id_factory=ids)
    deltas = []
    for piece, tid in [
        (prose, [1]),
        ("<tool_call>", [151657]),
        ('{"name": "get_weather", "arguments": {}}', [7]),
        ("</tool_call>", [151658]),
    ]:
        deltas += sp.feed(piece, token_ids=tid)
    msg = merge_deltas(deltas + sp.finish())
    assert msg["content"] == prose and calls(msg) == [("get_weather", {})]


def test_token_ids_from_a_tokenizer(shared_dir: Any) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    path = shared_dir / "tokenizers" / "qwen3" / "tokenizer.json"
    if not path.exists():
        pytest.skip("no qwen3 tokenizer")
    tok = tokenizers.Tokenizer.from_file(str(path))
    real_id = tok.token_to_id("<tool_call>")
    assert real_id is not None
    # the look-alike arrives as ordinary pieces, the real marker as its special token
    pieces = [
        ("I type ", tok.encode("I type ").ids),
        ("<tool_call>", tok.encode("<tool").ids + tok.encode("_call>").ids),
    ]
    pieces += [
        (" literally.", [13]),
        ("<tool_call>", [real_id]),
        ('\n{"name": "get_weather", "arguments": {}}\n', [1]),
    ]
    pieces += [("</tool_call>", [tok.token_to_id("</tool_call>")])]
    sp = StreamParser("qwen3", tokenizer=tok, id_factory=ids)
    deltas: list[Delta] = []
    for text, tids in pieces:
        deltas += sp.feed(text, token_ids=tids)
    msg = merge_deltas(deltas + sp.finish())
    assert msg["content"] == "I type <tool_call> literally."
    assert calls(msg) == [("get_weather", {})]


def test_parser_selection() -> None:
    assert run("hermes", "plain")["content"] == "plain"
    assert parse("x", "qwen2.5") == {"role": "assistant", "content": "x"}
    with pytest.raises(ParseError, match="unknown tool parser 'no-such-parser'"):
        StreamParser(parser="no-such-parser")
    sp = StreamParser(parser="hermes")
    sp.finish()
    with pytest.raises(ParseError, match=r"feed\(\) after finish\(\)"):
        sp.feed("more")


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    value=JSON_VALUES,
    indent=st.sampled_from([None, 1]),
    step=st.integers(1, 5),
    tail=st.sampled_from(["", " x", "}"]),
)
def test_json_scanner_finds_the_end(value: Any, indent: int | None, step: int, tail: str) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    source = text + tail
    scanner, stop = JsonScanner(), None
    for i in range(0, len(source), step):
        p = scanner.feed(source[i : i + step])
        if scanner.done or scanner.failed:
            stop = i + p
            break
    if stop is None:
        scanner.close()
        stop = len(source)
    assert scanner.done and not scanner.failed
    assert json.loads(source[:stop]) == value
    assert source[:stop].strip() == text
