"""Which parsers each template gets and where they come from: ``parser_support``, the derived
parser hook with its fallback, ``chatfmt templates``, and the community templates wired as
packaged official Jinja files (model ids, stop words, parsers)."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest
from typer.testing import CliRunner

import chatfmt
from chatfmt.cli import app
from chatfmt.errors import ParseError, UnsupportedFeatureError
from chatfmt.jinja.packaged import PackagedTemplate
from chatfmt.parsing import StreamParser, parse, support
from chatfmt.parsing import base as parsing_base
from chatfmt.parsing.support import derived_parsers_of, parser_support

runner = CliRunner()


def test_origins_of_native_and_packaged_parsers() -> None:
    qwen3 = parser_support(chatfmt.get_template("qwen3"))
    assert (qwen3.kind, qwen3.tool_parser, qwen3.tool_parser_origin) == (
        "native",
        "hermes",
        "native",
    )
    assert qwen3.reasoning_parser == "qwen3" and "<|im_end|>" in qwen3.end_of_turn
    ling = parser_support(chatfmt.get_template("inclusionAI/Ling-3.0-flash"))
    assert (ling.kind, ling.tool_parser, ling.tool_parser_origin) == (
        "packaged",
        "glm45",
        "packaged",
    )
    assert ling.end_of_turn[0] == "<|role_end|>"
    plain = parser_support(chatfmt.get_template("llama2"))
    assert (plain.tool_parser, plain.tool_parser_origin, plain.reasoning_parser) == (
        None,
        "none",
        None,
    )
    assert plain.to_dict()["end_of_turn"] == ["</s>"]


def test_a_jinja_source_recognized_as_native_keeps_the_native_parser() -> None:
    native = chatfmt.get_template("qwen2.5")
    source = next(iter(native.official_templates))
    from chatfmt.jinja.recognize import official_source

    text = official_source(source)
    assert text is not None
    got = parser_support(chatfmt.get_template(text))
    assert (got.kind, got.tool_parser, got.tool_parser_origin) == (
        "recognized-native",
        "hermes",
        "native",
    )


def _fake_derived(monkeypatch: pytest.MonkeyPatch, derive: Any) -> None:
    module = types.ModuleType(support.DERIVED_MODULE)
    module.derived_parsers = derive  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, support.DERIVED_MODULE, module)


def test_derived_parser_is_asked_for_templates_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def derive(tpl: Any, options: Any) -> Any:
        asked.append(tpl.name)
        return ("hermes", "think")  # registered names, as the derived module registers its own

    _fake_derived(monkeypatch, derive)
    got = parser_support(chatfmt.get_template("llama2"))
    assert (got.tool_parser, got.tool_parser_origin) == ("hermes", "derived")
    assert got.reasoning_parser == "think"
    assert parser_support(chatfmt.get_template("qwen3")).tool_parser_origin == "native"
    assert asked == ["llama2"]  # never asked for a template that names its parser


def test_derived_parser_falls_back_to_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot(tpl: Any, options: Any) -> Any:
        raise ParseError(f"cannot classify the tool-call form of {tpl.name}")

    llama2 = chatfmt.get_template("llama2")
    _fake_derived(monkeypatch, cannot)
    assert derived_parsers_of(llama2) is None
    assert parser_support(llama2).tool_parser_origin == "none"
    _fake_derived(monkeypatch, lambda tpl, options: None)  # no Jinja source
    assert derived_parsers_of(llama2) is None
    _fake_derived(monkeypatch, lambda tpl, options: ("plain", "think"))  # no calls rendered
    assert derived_parsers_of(llama2) is None
    _fake_derived(monkeypatch, lambda tpl, options: ("xml", None))
    assert derived_parsers_of(llama2) == ("xml", None)


def test_derived_parser_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(support, "DERIVED_MODULE", "chatfmt.parsing.no_such_module")
    assert derived_parsers_of(chatfmt.get_template("llama2")) is None
    monkeypatch.setitem(sys.modules, "chatfmt.parsing.no_such_module", types.ModuleType("x"))
    assert derived_parsers_of(chatfmt.get_template("llama2")) is None  # no derived_parsers


def test_templates_command_shows_parsers_and_origins() -> None:
    result = runner.invoke(app, ["templates"])
    assert result.exit_code == 0, result.output
    header = result.output.splitlines()[0].split()
    assert header[:3] == ["name", "aliases", "kind"] and "origin" in header
    line = next(x for x in result.output.splitlines() if x.startswith("laguna-xs.2 "))
    assert line.split()[2:6] == ["packaged", "glm45", "packaged", "think"]
    plain = next(x for x in result.output.splitlines() if x.startswith("llama2 "))
    assert " plain " in plain and " none " in plain
    rows = {r["name"]: r for r in json.loads(runner.invoke(app, ["templates", "--json"]).output)}
    assert {k: rows["qwen3"][k] for k in ("kind", "tool_parser", "tool_parser_origin")} == {
        "kind": "native",
        "tool_parser": "hermes",
        "tool_parser_origin": "native",
    }
    assert rows["reka-edge"]["tool_parser_origin"] == "packaged"
    assert rows["reka-edge"]["end_of_turn"] == ["<sep>", "<|endoftext|>"]
    assert rows["rwkv-world"]["tool_parser_origin"] == "none"


# ------------------------------------------------------------------ community templates, wired
#: (model id, template name, tool parser, a model output with one call in the family's format)
COMMUNITY = [
    (
        "RekaAI/reka-edge-2603",
        "reka-edge",
        "hermes",
        '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n\n<sep>',
    ),
    (
        "XHToken/Spark-X2.5-4B",
        "spark-x2.5",
        "glm45",
        "r</think><tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>"
        "<｜end▁of▁sentence｜>",
    ),
    (
        "XiaomiMiMo/MiMo-VL-7B-RL",
        "mimo-vl",
        "hermes",
        '<think>r</think>\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call><|im_end|>',
    ),
    (
        "speakleash/Bielik-11B-v3.0-Instruct",
        "bielik-v3",
        "hermes",
        '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call><|im_end|>',
    ),
    (
        "inclusionAI/Ling-3.0-flash",
        "ling-3.0",
        "glm45",
        "r</think><tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"
        "<|role_end|>",
    ),
    (
        "poolside/Laguna-XS.2",
        "laguna-xs.2",
        "glm45",
        "\n<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>\n"
        "</assistant>\n",
    ),
    (
        "poolside/Laguna-XS-2.1",
        "laguna-xs-2.1",
        "glm45",
        "\n<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>\n"
        "</assistant>\n",
    ),
    (
        "poolside/Laguna-S-2.1",
        "laguna-s-2.1",
        "glm45",
        "r</think><tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value></tool_call></assistant>",
    ),
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
        },
    }
]


@pytest.mark.parametrize(("model_id", "name", "parser", "output"), COMMUNITY)
def test_community_model_ids_parse_their_format(
    model_id: str, name: str, parser: str, output: str
) -> None:
    tpl = chatfmt.get_template(model_id)
    assert isinstance(tpl, PackagedTemplate) and (tpl.name, tpl.tool_parser) == (name, parser)
    msg = chatfmt.parse(output + "next turn", model_id, tools=TOOLS)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [
        ("f", '{"a": 1}')
    ]
    assert msg.finish_reason == "tool_calls" and msg.trailing_text == "next turn"
    if output.startswith(("r</think>", "<think>r</think>")):
        assert msg["reasoning_content"] == "r"


def test_rwkv_world_turns_end_at_a_blank_line() -> None:
    tpl = chatfmt.get_template("fla-hub/rwkv7-2.9B-g1")
    assert tpl.name == "rwkv-world" and tpl.tool_parser is None
    prompt = chatfmt.render([{"role": "user", "content": "Hi"}], tpl, enable_thinking=True)
    assert prompt == "<|rwkv_tokenizer_end_of_text|>User: Hi\n\nAssistant: <think>"
    msg = chatfmt.parse(" Let me see.</think> Hello!\n\nUser: more", tpl, enable_thinking=True)
    assert (msg["reasoning_content"], msg["content"]) == ("Let me see.", "Hello!")
    assert msg.trailing_text == "User: more"


@pytest.mark.parametrize("name", ["reka-edge", "bielik-v3"])
def test_thinking_prompt_prefills_the_reasoning_block(name: str) -> None:
    """enable_thinking=True opens <think> in the prompt: the output starts inside it."""
    prompt = chatfmt.render([{"role": "user", "content": "q"}], name, enable_thinking=True)
    assert prompt.rstrip().endswith("<think>")
    output = (
        'Check it.\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
    )
    msg = chatfmt.parse(output, name, tools=TOOLS, enable_thinking=True)
    assert msg["reasoning_content"] == "Check it."
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["f"]
    plain = chatfmt.parse("Hello.", name)  # thinking off by default: no reasoning block
    assert plain == {"role": "assistant", "content": "Hello."}


# ------------------------------------------------------------------ forced parser
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


# ------------------------------------------------------------------ _prefilled catches ChatFmtError only
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
