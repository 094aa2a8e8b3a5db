"""Hermes 2 Pro / Hermes 3, SmolLM3 and Yi: byte-identity with their official templates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import chatfmt
from _official import assert_conv_matches_official, ollama_source
from chatfmt import (
    Kind,
    RoleOrderError,
    Template,
    UnsupportedFeatureError,
    ValidationError,
)
from chatfmt.segments import join

from _support import TOOLS, conversations, official_render, official_source, texts

HERMES_FILES = {
    "hermes2-pro": "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
    "hermes3": "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
}
SMOL_FILE = "HuggingFaceTB-SmolLM3-3B.jinja"
BOS = "<|begin_of_text|>"
#: The plain ChatML template (OpenHermes 2.5 / Hermes 2 default without bos) from llama.cpp's cases.
CHATML_JINJA = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def render_pair(
    tpl: Template,
    source: str,
    conv: dict[str, Any],
    agp: bool,
    oracle_vars: dict[str, Any],
    **options: Any,
) -> str | None:
    """chatfmt == official, or both reject. Returns the render (None when rejected)."""
    return assert_conv_matches_official(
        tpl,
        source,
        conv,
        agp,
        options=options,
        official_vars=oracle_vars,
    )


def assert_segments(tpl: Template, conv: dict[str, Any], **options: Any) -> None:
    msgs, tools = conv["messages"], conv["tools"]
    segs = tpl.segments(msgs, tools=tools, **options)
    assert join(segs) == tpl.render(msgs, tools=tools, **options)
    sources = [m.get("content") or "" for m in msgs]
    for m in msgs:
        for c in m.get("tool_calls") or ():
            sources += [c["function"]["name"], c["function"]["arguments"]]
    for s in segs:
        if s.trained:
            assert s.message is not None and msgs[s.message]["role"] == "assistant"
            assert "<|im_start|>" not in s.text or s.kind is Kind.CONTENT
        if s.kind is Kind.CONTENT and s.message is not None and msgs[s.message]["role"] != "system":
            assert any(s.text in src for src in sources), s
    content = "".join(s.text for s in segs if s.kind is Kind.CONTENT)
    for token in tpl.control_tokens:
        assert content.count(token) <= "".join(sources).count(token)
    for i, m in enumerate(msgs):
        trained = [s for s in segs if s.message == i and s.trained]
        if m["role"] == "assistant":
            assert trained and trained[-1].text.endswith("<|im_end|>")
        else:
            assert not trained


def held_prefix(tpl: Template, msgs: list[dict[str, Any]], **kw: Any) -> str:
    segs = tpl.segments(msgs, add_generation_prompt=False, **kw)
    last = max(i for i, s in enumerate(segs) if s.trained)
    return join(segs[: last + 1])


# --------------------------------------------------------------------------- Hermes
@given(
    conv=conversations(tools=True, max_turns=3, end_with="any"),
    agp=st.booleans(),
    name=st.sampled_from(sorted(HERMES_FILES)),
)
def test_hermes_tool_use_matches_official(conv: dict[str, Any], agp: bool, name: str) -> None:
    tpl = chatfmt.get_template(name)
    lossy = [i for i, m in enumerate(conv["messages"]) if m.get("tool_calls") and m.get("content")]
    if lossy:  # the official template would drop this text: chatfmt raises instead (strict)
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.render(
                conv["messages"],
                tools=conv["tools"],
                add_generation_prompt=agp,
                strict_history=True,
            )
        assert err.value.index == lossy[0] and err.value.field == "content"
        return
    if (
        render_pair(tpl, official_source(HERMES_FILES[name]), conv, agp, {"bos_token": BOS})
        is not None
    ):
        assert_segments(tpl, conv)


@given(conv=conversations(max_turns=4, end_with="any"), agp=st.booleans())
def test_hermes_default_templates(conv: dict[str, Any], agp: bool) -> None:
    h3 = chatfmt.get_template("hermes3")
    render_pair(h3, ollama_source("library/hermes3:70b"), conv, agp, {"bos_token": BOS})
    h2 = chatfmt.get_template("hermes2-pro")
    assert h2.render(conv["messages"], add_generation_prompt=agp) == BOS + official_render(
        CHATML_JINJA, conv["messages"], add_generation_prompt=agp
    )
    assert_segments(h3, conv)


def test_hermes_tool_schema_quirks() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "description": " d ",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "array", "items": {"type": "string"}},
                    "b": {"description": " x "},
                    "c": {"type": ["string", "integer"]},
                    "d": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "e": {"type": None},
                },
            },
            "return": {"type": "string", "description": "ret"},
        },
    }
    msgs = [{"role": "user", "content": "hi"}]
    tpl = chatfmt.get_template("NousResearch/Hermes-3-Llama-3.1-8B")
    got = tpl.render(msgs, tools=[tool])
    assert got == official_render(
        official_source(HERMES_FILES["hermes3"]), msgs, tools=[tool], bos_token=BOS
    )
    assert (
        "f(a: list[Union[]], b: Union[], c: Union[str,int], d: dict[str, int], e: Any) -> str -  d "
        in got
    )
    empty = {"type": "function", "function": {"name": "g", "description": "", "parameters": {}}}
    assert '"parameters": {}}' in tpl.render(msgs, tools=[empty])
    for bad_fn in (
        {
            "name": "g",
            "description": "x",
            "parameters": {"type": "object", "properties": {"a": {"type": "null"}}},
        },
        {"name": "g", "parameters": {"type": "object", "properties": {}}},
        {"name": "g", "description": "x"},
    ):
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.render(msgs, tools=[{"type": "function", "function": bad_fn}])
        assert err.value.field == "tools[0]"


def test_hermes_tool_turns() -> None:
    tpl = chatfmt.get_template("hermes2-pro")
    call = {"type": "function", "function": {"name": "search", "arguments": '{"query":"x"}'}}
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "dropped by the template", "tool_calls": [call, call]},
        {"role": "tool", "content": "r1"},
        {"role": "tool", "content": "r2"},
        {"role": "user", "content": "next"},
    ]
    with pytest.raises(UnsupportedFeatureError) as err:  # the official template drops the text
        tpl.render(msgs, tools=TOOLS, strict_history=True)
    assert err.value.index == 1 and err.value.field == "content"
    msgs[1] = {**msgs[1], "content": None}
    got = tpl.render(msgs, tools=TOOLS)
    assert got.startswith(BOS + "<|im_start|>system\nYou are a function calling AI model.")
    assert "dropped" not in got
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "search", "arguments": {"query":"x"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "search", "arguments": {"query":"x"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>tool\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response>\n"
        "<|im_end|><|im_start|>user\nnext<|im_end|>\n<|im_start|>assistant\n"
    ) in got
    # Without tools but with tool calls, the tool_use format is used with an empty tool list.
    assert "<tools>  </tools>" in tpl.render(msgs)
    assert tpl.render("hi") == BOS + "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert chatfmt.get_template("hermes3").render("hi") == (
        BOS + "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tpl.tool_parser == "hermes" and "<|im_end|>" in tpl.generation_config.stop_words


# --------------------------------------------------------------------------- SmolLM3
@st.composite
def smol_conversations(draw: st.DrawFn) -> dict[str, Any]:
    conv = draw(conversations(tools=draw(st.booleans()), max_turns=3, end_with="any"))
    msgs = conv["messages"]
    if msgs[0]["role"] == "system" and draw(st.booleans()):
        flag = draw(st.sampled_from(["/think", "/no_think", " /no_think /think", ""]))
        msgs[0]["content"] = draw(texts()) + flag + draw(st.sampled_from(["", " ", "\n"]))
    if draw(st.integers(0, 3)) == 0:
        msgs.insert(draw(st.integers(1, len(msgs))), {"role": "system", "content": draw(texts())})
    return conv


def smol_dropped(msgs: list[dict[str, Any]]) -> set[tuple[int, str]]:
    """(index, field) of what the official SmolLM3 template drops silently; chatfmt raises there."""
    out = {(i, "role") for i, m in enumerate(msgs) if m["role"] == "system" and i}
    return out | {(i, "tool_calls") for i, m in enumerate(msgs) if m.get("tool_calls")}


def smol_kept(conv: dict[str, Any]) -> dict[str, Any]:
    """The conversation without later system messages, tool calls and their results."""
    msgs = [
        m
        for i, m in enumerate(conv["messages"])
        if not (m["role"] == "system" and i) and not m.get("tool_calls") and m["role"] != "tool"
    ]
    return {**conv, "messages": msgs}


@given(conv=smol_conversations(), agp=st.booleans(), thinking=st.sampled_from([None, True, False]))
def test_smollm3_matches_official(conv: dict[str, Any], agp: bool, thinking: bool | None) -> None:
    options = {} if thinking is None else {"enable_thinking": thinking}
    tpl = chatfmt.get_template("smollm3")
    lost = smol_dropped(conv["messages"])
    if lost:
        with pytest.raises(ValidationError) as err:  # RoleOrderError / UnsupportedFeatureError
            tpl.render(conv["messages"], tools=conv["tools"], add_generation_prompt=agp, **options)
        assert (err.value.index, err.value.field) in lost
        conv = smol_kept(conv)
    if render_pair(tpl, official_source(SMOL_FILE), conv, agp, {}, **options) is not None:
        assert_segments(tpl, conv, **options)


def test_smollm3_refuses_what_the_official_template_drops() -> None:
    tpl = chatfmt.get_template("smollm3")
    msgs = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "system", "content": "MIDSYS"},
        {"role": "user", "content": "q2"},
    ]
    assert "MIDSYS" not in official_render(official_source(SMOL_FILE), msgs)
    with pytest.raises(RoleOrderError) as order:
        tpl.render(msgs)
    assert (order.value.index, order.value.field) == (2, "role")
    with pytest.raises(RoleOrderError) as follow:  # in a follow-up fragment too
        tpl.render(msgs[2:], sequence_start=False)
    assert (follow.value.index, follow.value.field) == (0, "role")
    call = {"type": "function", "function": {"name": "search", "arguments": '{"query": "x"}'}}
    for content in (None, "", "Let me check."):
        turn = [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": content, "tool_calls": [call]},
            {"role": "tool", "content": "r"},
        ]
        assert "search" not in official_render(official_source(SMOL_FILE), turn)
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.render(turn, tools=TOOLS)
        assert (err.value.index, err.value.field) == (1, "tool_calls")
    # The first message may be a system message; tool results alone are user turns.
    assert "MIDSYS" in tpl.render([msgs[2], msgs[3]])


def test_smollm3_modes() -> None:
    tpl = chatfmt.get_template("HuggingFaceTB/SmolLM3-3B")
    msgs = [{"role": "system", "content": "Be brief. /no_think"}, {"role": "user", "content": "hi"}]
    got = tpl.render(msgs)
    assert "Reasoning Mode: /no_think\n\n## Custom Instructions\n\nBe brief.\n\n<|im_end|>" in got
    assert got.endswith("<|im_start|>assistant\n<think>\n\n</think>\n")
    think = tpl.render("hi")
    assert "Reasoning Mode: /think" in think and think.endswith("<|im_start|>assistant\n")
    assert "named SmolLM, trained by Hugging Face.\n\n<|im_end|>" in tpl.render(
        "hi", enable_thinking=False
    )
    with pytest.raises(ValidationError, match="needs at least one message") as err:
        tpl.render([])
    assert (err.value.index, err.value.field) == (None, "messages")
    assert tpl.generation_config.temperature == 0.6 and tpl.reasoning_parser == "think"


# --------------------------------------------------------------------------- Yi
@given(conv=conversations(max_turns=4, end_with="any"), agp=st.booleans())
def test_yi_is_chatml(conv: dict[str, Any], agp: bool) -> None:
    tpl = chatfmt.get_template("yi")
    render_pair(tpl, CHATML_JINJA, conv, agp, {})
    assert_segments(tpl, conv)


def test_yi_lmdeploy_cases(shared_dir: Any) -> None:
    data = json.loads((shared_dir / "reference" / "lmdeploy_template_cases.json").read_text())
    row = next(r for r in data["registry_matrix"] if r["template"] == "yi")
    inputs = data["registry_matrix_inputs"]
    tpl = chatfmt.get_template("01-ai/Yi-34B-Chat")
    assert tpl.name == "yi"
    for key in ("llamacpp_conversation", "no_system_conversation"):
        assert tpl.render(inputs[key]) == row["renders"][key]
    hello = [{"role": "user", "content": inputs["get_prompt"]}]
    assert tpl.render(hello) == row["renders"]["get_prompt_first_turn"]
    assert tpl.render(hello, sequence_start=False) == row["renders"]["get_prompt_later_turn"]
    assert tpl.generation_config.stop_words == ("<|im_end|>", "<|endoftext|>")


# --------------------------------------------------------------------------- follow-up turns
@given(
    a=conversations(tools=True, max_turns=2, end_with="assistant"),
    b=conversations(system=False, tools=True, max_turns=2, end_with="any"),
    name=st.sampled_from(["hermes2-pro", "hermes3", "smollm3", "yi"]),
    with_tools=st.booleans(),
)
def test_sequence_start_false(
    a: dict[str, Any], b: dict[str, Any], name: str, with_tools: bool
) -> None:
    tpl = chatfmt.get_template(name)
    msgs_a, msgs_b = a["messages"], b["messages"]
    plain = name in ("yi", "smollm3") or not with_tools  # smollm3 refuses tool calls
    if plain:
        msgs_a = [m for m in msgs_a if not m.get("tool_calls") and m["role"] != "tool"]
        msgs_b = [m for m in msgs_b if not m.get("tool_calls") and m["role"] != "tool"]
    assume(all("/think" not in (m.get("content") or "") for m in msgs_a))
    # Text beside tool calls is refused by the Hermes tool-use format (tested above).
    assume(not any(m.get("tool_calls") and m.get("content") for m in msgs_a + msgs_b))
    tools = None if plain else TOOLS
    full = tpl.render(msgs_a + msgs_b, tools=tools)
    follow = tpl.render(msgs_b, tools=tools, sequence_start=False)
    assert full == held_prefix(tpl, msgs_a, tools=tools) + follow


def test_data_files_are_the_official_templates(shared_dir: Any) -> None:
    folder = Path(chatfmt.__file__).parent / "data" / "templates"
    for name in ("hermes2-pro", "hermes3", "smollm3"):
        for f in chatfmt.get_template(name).official_templates:
            expected = (
                ollama_source("library/hermes3:70b")
                if f.startswith("ollama-")
                else official_source(f)
            )
            assert (folder / f).read_text(encoding="utf-8") == expected
