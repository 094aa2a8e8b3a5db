"""Command-R and Granite 3/4: byte-identity with the official Jinja templates, tools, options, segments."""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_conv_matches_official, official_today, ollama_source
from _segments import assert_follow_up_continues
from chatfmt.errors import (
    RoleOrderError,
    UnsupportedFeatureError,
    ValidationError,
)
from chatfmt.families.cohere.templates import jinja_indent
from chatfmt.segments import Kind, Segment

from _support import ROOT, TOOLS, conversations, official_render, official_source

DATA = ROOT / "src" / "chatfmt" / "data" / "templates"
TODAY = dt.date(2025, 4, 5)

#: The shared tools, with the parameter descriptions Command-R's template requires.
DESCRIBED_TOOLS = copy.deepcopy(TOOLS)
DESCRIBED_TOOLS[0]["function"]["parameters"]["properties"]["unit"]["description"] = "Unit"
DESCRIBED_TOOLS[1]["function"]["parameters"]["properties"]["query"]["description"] = "Query 🔍"

DOCS = [
    {"doc_id": 1, "text": "Paris is in France."},
    {"doc_id": "b", "text": " 你好 <|end_of_text|>"},
]


@pytest.fixture(autouse=True)
def fixed_today() -> Iterator[None]:
    """Pin transformers' ``strftime_now`` to TODAY (chatfmt gets ``now=TODAY``)."""
    with official_today(TODAY):
        yield


def _content_is_the_owners(s: Segment, msgs: list[dict[str, Any]]) -> None:
    owner = msgs[s.message] if s.message is not None else {}
    if s.kind is Kind.CONTENT and owner.get("content") and not owner.get("tool_calls"):
        assert s.text in owner["content"]


def check(
    name: str,
    source: str,
    conv: dict[str, Any],
    agp: bool,
    *,
    tokens: dict[str, str] | None = None,
    exempt: Any = None,
    **options: Any,
) -> None:
    """Byte-identical to the official template, or a chatfmt error where it raises."""
    assert_conv_matches_official(
        name,
        source,
        conv,
        agp,
        options=options,
        official_vars=tokens,
        chatfmt_vars={"now": TODAY},
        extension=exempt is not None and exempt(conv["messages"]),
        segments=True,
        each_segment=_content_is_the_owners,
    )


def check_follow_up(name: str, conv: dict[str, Any], **options: Any) -> None:
    tpl = chatfmt.get_template(name)
    msgs = conv["messages"]
    last = max(
        (i for i, m in enumerate(msgs) if m["role"] == "assistant" and not m.get("tool_calls")),
        default=None,
    )
    if last is None or last == len(msgs) - 1:
        return
    assert assert_follow_up_continues(tpl, msgs, last, tools=conv["tools"], now=TODAY, **options)


# ------------------------------------------------------------------ Command-R
CR_TOOL_USE = official_source("CohereForAI-c4ai-command-r-plus-tool_use.jinja")
CR_DEFAULT = (DATA / "ollama-command-r-35b.jinja").read_text(encoding="utf-8")
CR_TOKENS = {"bos_token": "<BOS_TOKEN>", "eos_token": "<|END_OF_TURN_TOKEN|>"}


@given(conv=conversations(end_with="any", max_turns=4), agp=st.booleans())
def test_command_r_default_matches_official(conv: dict[str, Any], agp: bool) -> None:
    check("command-r", CR_DEFAULT, conv, agp, tokens=CR_TOKENS)
    check_follow_up("command-r", conv)


@given(conv=conversations(tools=True, end_with="any", max_turns=3), agp=st.booleans())
def test_command_r_tool_use_matches_official(conv: dict[str, Any], agp: bool) -> None:
    conv = {**conv, "tools": DESCRIBED_TOOLS}
    check("command-r", CR_TOOL_USE, conv, agp, tokens=CR_TOKENS)
    check_follow_up("command-r", conv)


@given(roles=st.lists(st.sampled_from(["system", "user", "assistant"]), min_size=1, max_size=5))
def test_command_r_role_order_matches_official(roles: list[str]) -> None:
    conv = {
        "messages": [{"role": r, "content": f" {r}{i} "} for i, r in enumerate(roles)],
        "tools": None,
    }
    late = [i for i, r in enumerate(roles) if r == "system" and i > 0]
    try:
        check("command-r", CR_DEFAULT, conv, True, tokens=CR_TOKENS)
    except UnsupportedFeatureError as err:
        # The official default template drops a later system message; chatfmt refuses.
        assert late and (err.index, err.field) == (late[0], "role")


def test_command_r_tool_signatures_and_quirks() -> None:
    odd = {
        "type": "function",
        "function": {
            "name": "odd",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "array", "items": {"type": "string"}, "description": "A"},
                    "b": {"type": ["string", "integer"], "description": "B"},
                    "c": {"description": "C"},
                    "d": {
                        "type": "object",
                        "additionalProperties": {"type": "number"},
                        "description": "D",
                    },
                },
                "required": ["a", "c"],
            },
        },
    }
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "odd", "arguments": json.dumps({"a": ["x\u2028y"]})},
                },
                {"id": "2", "type": "function", "function": {"name": "odd", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": " ok "},
    ]
    conv = {"messages": msgs, "tools": [odd]}
    check("command-r", CR_TOOL_USE, conv, True, tokens=CR_TOKENS)
    out = chatfmt.get_template("command-r").render(msgs, tools=[odd])
    assert "def odd(a: List[Union[]], b: Optional[Union[str,int]] = None, c: Union[]," in out
    assert "<results>\nok</results>" in out


def test_command_r_rejects_what_official_cannot_render() -> None:
    tpl = chatfmt.get_template("command-r")
    with pytest.raises(ValidationError) as err:
        tpl.render([{"role": "user", "content": "x"}], tools=TOOLS)  # 'unit' has no description
    assert err.value.field == "tools[0].function.parameters.properties.unit.description"
    with pytest.raises(RoleOrderError) as order:
        tpl.render([{"role": "user", "content": "x"}, {"role": "user", "content": "y"}])
    assert order.value.index == 1


def test_jinja_indent_matches_jinja() -> None:
    import jinja2

    env = jinja2.Environment()
    for text in ["a\nb", "a\n\nb\n", "x\u2028y\x85z", "", "one"]:
        for first in (False, True):
            expected = env.from_string("{{ t|indent(8, first=f) }}").render(t=text, f=first)
            assert jinja_indent(text, 8, first) == expected


# ------------------------------------------------------------------ Granite
G3 = official_source("ibm-granite-granite-3.3-2B-Instruct.jinja")
G4 = official_source("ibm-granite-granite-4.0.jinja")
G41 = official_source("ibm-granite-granite-4.1.jinja")


def _call_without_content(msgs: list[dict[str, Any]]) -> bool:
    return any(m.get("tool_calls") and m.get("content") is None for m in msgs)


def _g3_dropped(msgs: list[dict[str, Any]]) -> set[tuple[int, str]]:
    """Where the official Granite 3 template would drop tool calls silently (text with calls)."""
    return {
        (i, "tool_calls") for i, m in enumerate(msgs) if m.get("tool_calls") and m.get("content")
    }


def _g3_normalized(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documented workaround: content "" with tool calls renders as content null."""
    return [
        {**m, "content": None} if m.get("tool_calls") and m.get("content") == "" else m
        for m in msgs
    ]


G3_OPTIONS = st.sampled_from(
    [
        {},
        {"documents": DOCS},
        {"thinking": True},
        {"documents": DOCS, "controls": {"citations": True, "length": "short"}},
        {"documents": DOCS, "controls": ["hallucinations"]},
    ]
)


@given(
    conv=conversations(tools=True, end_with="any", max_turns=3),
    agp=st.booleans(),
    opts=G3_OPTIONS,
    with_tools=st.booleans(),
)
def test_granite3_matches_official(
    conv: dict[str, Any], agp: bool, opts: dict[str, Any], with_tools: bool
) -> None:
    conv = {**conv, "tools": conv["tools"] if with_tools else None}
    tpl = chatfmt.get_template("granite3")
    kwargs = dict(tools=conv["tools"], add_generation_prompt=agp, now=TODAY, **opts)
    lost = _g3_dropped(conv["messages"])
    if lost:
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.render(conv["messages"], **kwargs, strict_history=True)
        assert (err.value.index, err.value.field) in lost
        return
    norm = {**conv, "messages": _g3_normalized(conv["messages"])}
    check("granite3", G3, norm, agp, exempt=_call_without_content, **opts)
    assert tpl.render(conv["messages"], **kwargs) == tpl.render(norm["messages"], **kwargs)
    check_follow_up("granite3", conv, **opts)


#: Granite 3.2's official template: the chat template of its GGUF (Ollama's granite3.2:8b, in
#: ../shared/reference/ollama_gguf_chat_templates.json), shipped as a copy.
G32 = (DATA / "ibm-granite-granite-3.2-8b-instruct.jinja").read_text(encoding="utf-8")
G32_DOCS = [{"text": "Paris is in France."}, {"text": " 你好 <|end_of_text|>"}]


def test_granite32_copy_is_the_gguf_template() -> None:
    assert ollama_source("library/granite3.2:8b") == G32


@given(
    conv=conversations(tools=True, end_with="any", max_turns=3),
    agp=st.booleans(),
    opts=st.sampled_from(
        [
            {},
            {"documents": G32_DOCS},
            {"thinking": True},
            {"documents": G32_DOCS, "controls": {"citations": True, "length": "short"}},
            {"documents": G32_DOCS, "controls": ["hallucinations"]},
        ]
    ),
    with_tools=st.booleans(),
)
def test_granite32_matches_official(
    conv: dict[str, Any], agp: bool, opts: dict[str, Any], with_tools: bool
) -> None:
    conv = {**conv, "tools": conv["tools"] if with_tools else None}
    tpl = chatfmt.get_template("ibm-granite/granite-3.2-8b-instruct")
    assert tpl.name == "granite3.2"
    kwargs = dict(tools=conv["tools"], add_generation_prompt=agp, now=TODAY, **opts)
    lost = _g3_dropped(conv["messages"])
    if lost:
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.render(conv["messages"], **kwargs, strict_history=True)
        assert (err.value.index, err.value.field) in lost
        return
    norm = {**conv, "messages": _g3_normalized(conv["messages"])}
    check("granite3.2", G32, norm, agp, exempt=_call_without_content, **opts)
    check_follow_up("granite3.2", conv, **opts)


def test_granite32_thinking_prompt() -> None:
    # the prompt IBM's Granite 3.2 reasoning recipe sends (thinking on, no system message)
    ask = "Find the fastest way for a seller to visit all the cities in their region"
    got = chatfmt.render(
        [{"role": "user", "content": ask}],
        "ibm-granite/granite-3.2-8b-instruct",
        thinking=True,
        now=dt.date(2025, 3, 13),
    )
    assert got.startswith(
        "<|start_of_role|>system<|end_of_role|>Knowledge Cutoff Date: April 2024.\n"
        "Today's Date: March 13, 2025.\nYou are Granite, developed by IBM. You are a helpful AI "
        "assistant.\nRespond to every user query in a comprehensive and detailed way."
    )
    assert got.endswith(
        "Write your thoughts after 'Here is my thought process:' and write your response after "
        "'Here is my response:' for each user query.<|end_of_text|>\n<|start_of_role|>user"
        f"<|end_of_role|>{ask}<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"
    )


@pytest.mark.parametrize(("name", "source"), [("granite4", G4), ("granite4.1", G41)])
@given(
    conv=conversations(tools=True, end_with="any", max_turns=3),
    agp=st.booleans(),
    docs=st.sampled_from([None, DOCS]),
    with_tools=st.booleans(),
)
def test_granite4_matches_official(
    name: str, source: str, conv: dict[str, Any], agp: bool, docs: Any, with_tools: bool
) -> None:
    conv = {**conv, "tools": conv["tools"] if with_tools else None}
    check(name, source, conv, agp, documents=docs)
    check_follow_up(name, conv, documents=docs)


def test_granite_examples() -> None:
    msgs = [{"role": "user", "content": "Weather?"}]
    g3 = chatfmt.get_template("ibm-granite/granite-3.3-2b-instruct")
    assert g3.name == "granite3"
    assert "Today's Date: April 05, 2025." in g3.render(msgs, now=TODAY)
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"type": "function", "function": {"name": "search", "arguments": '{"query": "x"}'}}
        ],
    }
    out = g3.render([*msgs, call, {"role": "tool", "content": "sunny"}], tools=TOOLS, now=TODAY)
    assert (
        '<|start_of_role|>assistant<|end_of_role|><|tool_call|>[{"name": "search", "arguments": {"query": "x"}}]'
        in out
    )
    # Content "" counts as null; text with calls would lose the calls officially, so it raises
    # with strict_history (by default the text is written before the calls, as the model does).
    empty = {**call, "content": ""}
    assert g3.render([*msgs, empty], tools=TOOLS, now=TODAY) == g3.render(
        [*msgs, call], tools=TOOLS, now=TODAY
    )
    with pytest.raises(UnsupportedFeatureError) as err:
        g3.render(
            [*msgs, {**call, "content": "Let me check."}],
            tools=TOOLS,
            now=TODAY,
            strict_history=True,
        )
    assert (err.value.index, err.value.field) == (1, "tool_calls")
    assert "drop" in str(err.value)
    official = official_render(
        G3, [*msgs, {**call, "content": "Let me check."}], tools=TOOLS, add_generation_prompt=False
    )
    # The official template writes only the text: the call is lost.
    assert official.split("<|start_of_role|>assistant<|end_of_role|>")[-1] == (
        "Let me check.<|end_of_text|>\n"
    )
    g4 = chatfmt.get_template("ibm-granite/granite-4.0-h-small")
    out4 = g4.render([*msgs, call, {"role": "tool", "content": "sunny"}], tools=TOOLS)
    assert (
        '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call><|end_of_text|>'
        in out4
    )
    assert (
        "<|start_of_role|>user<|end_of_role|>\n<tool_response>\nsunny\n</tool_response><|end_of_text|>"
        in out4
    )
    assert chatfmt.get_template("granite4.1").render(msgs, add_generation_prompt=False) == (
        "<|start_of_role|>user<|end_of_role|>Weather?<|end_of_text|>\n"
    )
    for name in ("granite3", "granite4", "command-r"):
        tpl = chatfmt.get_template(name)
        assert tpl.supports_tools and tpl.tool_parser in ("granite", "command_r")
        for f in tpl.official_templates:
            assert (DATA / f).is_file()


# ------------------------------------------------------------------ README Command-R example
def test_command_r_readme_example() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string", "description": "City name"}},
                "required": ["location"],
            },
        },
    }
    cr = chatfmt.get_template("CohereForAI/c4ai-command-r-plus")
    prompt = cr.render([{"role": "user", "content": "Weather in Paris?"}], tools=[tool])
    assert "get_current_weather" in prompt and "City name" in prompt
