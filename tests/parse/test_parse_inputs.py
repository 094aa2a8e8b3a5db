"""What ``parse`` and ``StreamParser`` accept and survive: argument types, deeply nested JSON,
and the steps parser families share (raw arguments, code bodies)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatfmt.errors import ParseError
from chatfmt.families.deepseek.parser import DeepSeekV3Parser
from chatfmt.families.internlm.parser import InternLM2Parser
from chatfmt.families.llama.parser import Llama3JsonParser
from chatfmt.families.mistral.parser import MistralParser
from chatfmt.parsing import Delta, StreamParser, merge_deltas, parse
from chatfmt.parsing.blocks import BlockParser

TOOL = {
    "type": "function",
    "function": {"name": "f", "parameters": {"type": "object", "properties": {}}},
}

CALL = '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'


# ------------------------------------------------------------------ parse argument types
@pytest.mark.parametrize("text", [None, b"hi", 5, ["hi"]])
def test_parse_and_feed_need_str(text: Any) -> None:
    with pytest.raises(ParseError, match="str"):
        parse(text, "qwen3")
    sp = StreamParser("qwen3")
    with pytest.raises(ParseError, match="str"):
        sp.feed(text)
    # the parser is still usable after a rejected chunk
    assert merge_deltas(sp.feed("ok") + sp.finish())["content"] == "ok"


@pytest.mark.parametrize("tools", [5, "f", {"f": TOOL}, {"type": "function"}])
def test_parse_tools_must_be_a_list(tools: Any) -> None:
    with pytest.raises(ParseError, match="tools must be a list"):
        parse(CALL, "qwen3", tools=tools)


def test_parse_tools_list_still_flags_unknown_names() -> None:
    assert "error" not in parse(CALL, "qwen2.5", tools=[TOOL])["tool_calls"][0]
    other = {"type": "function", "function": {"name": "g"}}
    assert parse(CALL, "qwen2.5", tools=(other,))["tool_calls"][0]["error"] == "unknown tool 'f'"


@pytest.mark.parametrize("factory", [5, "call_1", object()])
def test_id_factory_must_be_callable(factory: Any) -> None:
    with pytest.raises(ParseError, match="id_factory"):
        parse(CALL, "qwen3", id_factory=factory)


# ------------------------------------------------------------------ deep JSON
DEPTH = 100_000
DEEP = "[" * DEPTH + "]" * DEPTH

DEEP_CASES = {
    "hermes": (
        "hermes",
        '<tool_call>\n{"name": "f", "arguments": {"a": ' + DEEP + "}}\n</tool_call>",
    ),
    "hermes_list_args": (
        "hermes",
        '<tool_call>{"name": "f", "arguments": ' + DEEP + "}</tool_call>",
    ),
    "mistral": ("mistral", '[TOOL_CALLS][{"name": "f", "arguments": {"a": ' + DEEP + "}}]"),
    "mistral_name": ("mistral", "[TOOL_CALLS]f[ARGS]{" + '"a": ' + DEEP + "}"),
    "deepseek_v31": (
        "deepseek_v31",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"
        + '"a": '
        + DEEP
        + "}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    ),
    "internlm2": (
        "internlm2",
        '<|action_start|><|plugin|>{"name": "f", "parameters": {"a": ' + DEEP + "}}<|action_end|>",
    ),
    "llama3": ("llama3_json", '{"name": "f", "parameters": {"a": ' + DEEP + "}}"),
    "glm45": (
        "glm45",
        "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>" + DEEP + "</arg_value>\n</tool_call>",
    ),
    "chatglm3": ("chatglm3", "f\n```python\ntool_call(a=" + DEEP + ")\n```"),
}


@pytest.mark.parametrize("case", sorted(DEEP_CASES))
def test_deep_json_never_raises_recursion_error(case: str) -> None:
    parser, text = DEEP_CASES[case]
    msg = parse(text, parser=parser, tools=[TOOL])
    assert msg["tool_calls"], msg  # the call is recognised (flagged or not), not content
    streamed = StreamParser(parser=parser, tools=[TOOL])
    deltas: list[Delta] = []
    for i in range(0, len(text), 4096):
        deltas += streamed.feed(text[i : i + 4096])
    deltas += streamed.finish()
    assert merge_deltas(deltas) == _without_ids(msg, merge_deltas(deltas))
    # never drop text: the deep value is still there, as arguments or content
    kept = (msg.get("content") or "") + "".join(
        c["function"]["arguments"] for c in msg.get("tool_calls", [])
    )
    assert kept.count("[") >= DEPTH or "[" * 1000 in json.dumps(msg)


def _without_ids(expected: dict[str, Any], got: dict[str, Any]) -> dict[str, Any]:
    """``expected`` with the (random) call ids of ``got``."""
    out = json.loads(json.dumps(expected))
    for a, b in zip(out.get("tool_calls", []), got.get("tool_calls", [])):
        a["id"] = b["id"]
    return out


def test_deep_arguments_are_flagged_invalid_with_raw_text() -> None:
    text = '<tool_call>\n{"name": "f", "arguments": ' + DEEP + "}\n</tool_call>"
    msg = parse(text, "qwen2.5")
    (call,) = msg["tool_calls"]
    assert call["error"] == "arguments are nested too deeply to decode"
    assert call["function"]["arguments"] == DEEP


# ------------------------------------------------------------------ shared steps
def test_shared_raw_args_and_code_steps() -> None:
    for cls in (DeepSeekV3Parser, MistralParser):
        assert "feed_raw_args" not in vars(cls)
    assert "_s_ds_args" in vars(DeepSeekV3Parser) and "_s_args" in vars(MistralParser)
    for cls in (InternLM2Parser, Llama3JsonParser):
        assert "_s_code" not in vars(cls) and cls._s_code is BlockParser._s_code
    assert InternLM2Parser.code_end == "<|action_end|>"
    assert Llama3JsonParser.code_end == "<|eom_id|>"
    # behaviour: code bodies end at each family's marker, raw args stream and fail as before
    code = parse(
        "<|action_start|><|interpreter|>\n```python\nprint(1)\n```<|action_end|>x", "internlm2"
    )
    assert (
        code["tool_calls"][0]["code_interpreter"] == {"input": "print(1)"}
        and code["content"] == "x"
    )
    py = parse("<|python_tag|>print(2)<|eom_id|>", "llama3_json")
    assert py["tool_calls"][0]["code_interpreter"] == {"input": "print(2)"}
    mis = parse('[TOOL_CALLS]f[ARGS]{"a": 1}[TOOL_CALLS]g[ARGS]{bad', parser="mistral")
    assert [c["function"]["name"] for c in mis["tool_calls"]] == ["f", "g"]
    assert (
        "error" not in mis["tool_calls"][0]
        and mis["tool_calls"][1]["function"]["arguments"] == "{bad"
    )
    ds = parse(
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{oops}<｜tool▁call▁end｜>"
        "<｜tool▁call▁begin｜>g<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "deepseek_v31",
    )
    assert (
        "error" in ds["tool_calls"][0] and ds["tool_calls"][0]["function"]["arguments"] == "{oops}"
    )
    assert ds["tool_calls"][1]["function"] == {"name": "g", "arguments": "{}"}
