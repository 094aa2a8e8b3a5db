"""Regression tests for the review findings on tokens, parsing and the data pipeline."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import chatfmt
from chatfmt.data_pipeline import record_to_conversation, tokenize_dataset
from chatfmt.errors import ParseError, TokenizationError, UnsupportedFeatureError, ValidationError
from chatfmt.families.deepseek.parser import DeepSeekV3Parser
from chatfmt.families.internlm.parser import InternLM2Parser
from chatfmt.families.llama.parser import Llama3JsonParser
from chatfmt.families.mistral.parser import MistralParser
from chatfmt.parsing import StreamParser, merge_deltas, parse
from chatfmt.parsing import base as parsing_base
from chatfmt.parsing.blocks import BlockParser
from chatfmt.spec import SpecTemplate, spec_from_dict
from chatfmt.tokens import encode, encode_batch, load_tokenizer
from chatfmt.tokens.control import pattern_of as _special_pattern

from _support import SHARED

QWEN = SHARED / "tokenizers" / "qwen3"
CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]
TOOL = {
    "type": "function",
    "function": {"name": "f", "parameters": {"type": "object", "properties": {}}},
}
CALL = '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'


@pytest.fixture(scope="module")
def qwen() -> Any:
    if not QWEN.exists():
        if os.environ.get("CI"):
            raise RuntimeError("qwen3 tokenizer missing in CI")
        pytest.skip(f"reference tokenizer not found at {QWEN}")
    return load_tokenizer(QWEN)


# ------------------------------------------------------------------ 1. max_length (f09)
@pytest.mark.parametrize("bad", [0, -1, True, False, "5", 5.5, 5.0, [5]])
def test_max_length_must_be_a_positive_int(qwen: Any, bad: Any) -> None:
    for truncation in ("error", "right", "left"):
        with pytest.raises(TokenizationError, match="max_length"):
            encode(CHAT, "qwen3", qwen, max_length=bad, truncation=truncation)
        with pytest.raises(TokenizationError, match="max_length"):
            encode_batch([CHAT], "qwen3", qwen, max_length=bad, truncation=truncation)


def test_max_length_valid_values_still_work(qwen: Any) -> None:
    full = encode(CHAT, "qwen3", qwen)
    assert len(encode(CHAT, "qwen3", qwen, max_length=None)) == len(full)
    cut = encode(CHAT, "qwen3", qwen, max_length=len(full) - 1, truncation="right")
    assert cut.truncated_from == len(full) and cut.input_ids == full.input_ids[:-1]


# ------------------------------------------------------------------ 2. parse argument types (f09)
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


# ------------------------------------------------------------------ 3. deep JSON (f10)
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
    deltas: list[dict[str, Any]] = []
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


# ------------------------------------------------------------------ 4. special-check cache (f11)
def _spec(marker: str) -> SpecTemplate:
    return SpecTemplate(
        spec_from_dict(
            {
                "name": "t",
                "roles": {
                    "user": {"prefix": "U:"},
                    "assistant": {"prefix": "A:", "suffix": marker},
                },
                "control_tokens": [marker],
            }
        )
    )


def test_special_check_follows_the_template_not_its_id(qwen: Any) -> None:
    msgs = [{"role": "user", "content": "hello [[B]]"}, {"role": "assistant", "content": "x"}]
    seen: set[int] = set()
    for _ in range(200):
        tb = _spec("[[B]]")
        seen.add(id(tb))
        with pytest.raises(TokenizationError, match=r"\[\[B\]\]"):
            encode(msgs, tb, qwen, on_special="raise")
        del tb
        gc.collect()
        ta = _spec("[[A]]")
        reused = id(ta) in seen
        assert encode(msgs, ta, qwen, on_special="raise").num_trained > 0
        del ta
        gc.collect()
        if reused:
            break
    assert not any(k.startswith("_chatfmt_special_check") for k in vars(qwen))


def test_special_pattern_cache_is_bounded_and_by_value() -> None:
    maxsize = _special_pattern.cache_info().maxsize
    assert maxsize is not None
    for i in range(maxsize + 10):
        _special_pattern(frozenset({f"<|t{i}|>"}))
    assert _special_pattern.cache_info().currsize <= maxsize
    a = _special_pattern(frozenset({"<a>", "<ab>"}))
    assert a is _special_pattern(frozenset({"<ab>", "<a>"}))
    assert a is not None and a.search("x<ab>").group() == "<ab>"  # longest first
    assert _special_pattern(frozenset()) is None


# ------------------------------------------------------------------ 5. forced parser (f13)
def test_forced_tool_parser_keeps_reasoning_and_prefill() -> None:
    out = '<think>plan</think><tool_call>\n{"name":"f","arguments":{}}\n</tool_call>'
    msg = parse(out, "qwen3", parser="hermes")
    assert msg["reasoning_content"] == "plan" and msg["content"] is None
    assert msg["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}
    # prefill detection of the template is kept too (QwQ opens <think> in the prompt)
    prefilled = parse("plan</think>answer", "qwq", parser="plain", enable_thinking=True)
    assert prefilled == parse("plan</think>answer", "qwq", enable_thinking=True)
    assert prefilled["reasoning_content"] == "plan" and prefilled["content"] == "answer"
    # reasoning_parser=None turns it off explicitly
    off = parse(out, "qwen3", parser="hermes", reasoning_parser=None)
    assert off["content"] == "<think>plan</think>" and "reasoning_content" not in off


def test_unknown_parse_options_are_rejected() -> None:
    with pytest.raises(ParseError, match="enable_thinkng") as info:
        parse("hi", "qwen3", enable_thinkng=False)
    assert "enable_thinking" in str(info.value) and "thinking_prefilled" in str(info.value)
    with pytest.raises(ParseError, match="thinking_prefiled"):
        StreamParser("hermes", thinking_prefiled=True)
    # known template options and parser options still work
    assert parse("hi", "qwen3", enable_thinking=False)["content"] == "hi"
    assert parse("a</think>b", "think", thinking_prefilled=True)["reasoning_content"] == "a"


# ------------------------------------------------------------------ 6. _prefilled catches ChatFmtError only
def test_prefill_probe_swallows_only_chatfmt_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    tpl = chatfmt.get_template("qwen3")

    def unsupported(*_a: Any, **_k: Any) -> str:
        raise UnsupportedFeatureError("no bare question")

    def bug(*_a: Any, **_k: Any) -> str:
        raise RuntimeError("template bug")

    # The probe runs once per template: a fresh plan cache (restored after the test).
    monkeypatch.setattr(parsing_base, "_PLANS", type(parsing_base._PLANS)())
    monkeypatch.setattr(type(tpl), "render", unsupported)
    # cannot probe: assume no prefill, so a leading <think> is still recognised
    assert parse("<think>r</think>a", tpl)["reasoning_content"] == "r"
    monkeypatch.setattr(type(tpl), "render", bug)
    parsing_base._PLANS.clear()
    with pytest.raises(RuntimeError, match="template bug"):
        parse("a", tpl)


# ------------------------------------------------------------------ 7. ShareGPT system column (f16)
def test_sharegpt_system_column_and_system_turn() -> None:
    turns = [{"from": "system", "value": "TURN"}, {"from": "human", "value": "hi"}]
    with pytest.raises(ValidationError, match="'system' column and a different system turn"):
        record_to_conversation({"system": "COLUMN", "conversations": turns})
    same = record_to_conversation({"system": "TURN", "conversations": turns})
    assert same["messages"] == [
        {"role": "system", "content": "TURN"},
        {"role": "user", "content": "hi"},
    ]
    col = record_to_conversation({"system": "COLUMN", "conversations": turns[1:]})
    assert col["messages"][0] == {"role": "system", "content": "COLUMN"}
    for empty in ("", None):
        assert (
            record_to_conversation({"system": empty, "conversations": turns})["messages"][0][
                "content"
            ]
            == "TURN"
        )
    with pytest.raises(ValidationError, match="'system' must be a string"):
        record_to_conversation({"system": 5, "conversations": turns[1:]})


def test_sharegpt_conflicting_system_goes_to_errors_file(tmp_path: Path, qwen: Any) -> None:
    rows = [
        {
            "system": "COLUMN",
            "conversations": [
                {"from": "system", "value": "TURN"},
                {"from": "human", "value": "q"},
                {"from": "gpt", "value": "a"},
            ],
        },
        {
            "system": "S",
            "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}],
        },
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    summary = tokenize_dataset(src, out, template="qwen3", tokenizer=qwen, progress=False)
    assert summary.to_dict()["errors"] == 1
    errors = [json.loads(line) for line in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    assert [e["row"] for e in errors] == [0]
    assert "different system turn" in errors[0]["reason"]


# ------------------------------------------------------------------ 8. --train-on none
def test_cli_train_on_help_and_values(tmp_path: Path, qwen: Any) -> None:
    from chatfmt.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["tokenize", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    line = next(ln for ln in res.output.splitlines() if "--train-on" in ln)
    idx = res.output.index(line)
    assert "none" in res.output[idx : idx + 400]
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": "q"}]}) + "\n")
    base = ["tokenize", str(src), "-t", "qwen3", "--tokenizer", str(QWEN), "--no-progress"]
    bad = runner.invoke(app, [*base, "-o", str(tmp_path / "b"), "--train-on", "bogus"])
    assert bad.exit_code == 2 and "none" in bad.output
    ok = runner.invoke(app, [*base, "-o", str(tmp_path / "n"), "--train-on", "none", "--json"])
    assert ok.exit_code == 0, ok.output
    summary = json.loads(ok.output)
    assert summary["samples_out"] == 1 and summary["errors"] == 0


# ------------------------------------------------------------------ 9. shared steps
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
