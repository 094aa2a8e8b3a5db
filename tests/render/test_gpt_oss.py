"""gpt-oss (Harmony): the native template is byte-identical to the official Jinja.

The oracle is transformers' own renderer on ``openai-gpt-oss-120b.jinja`` (the
official template reads a reply's reasoning from ``thinking``; chatfmt's Jinja
backend passes ``reasoning_content`` there too). Conversations, tool schemas and
template options are drawn by hypothesis.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_matches_official, official_today
from chatfmt.errors import UnsupportedFeatureError, ValidationError
from chatfmt.families.gpt_oss.templates import GPT_OSS
from chatfmt.segments import Kind, join

from _support import TEMPLATES, TOOLS, official_render, official_source, texts

FILE = "openai-gpt-oss-120b.jinja"


def _for_official(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as the official template reads them: reasoning in ``thinking``; the null
    content of a tool-call message as "" (the official template fails on null, chatfmt renders
    it as "" — the documented workaround)."""
    out = copy.deepcopy(messages)
    for m in out:
        if m.get("reasoning_content") is not None:
            m["thinking"] = m.pop("reasoning_content")
        if m.get("tool_calls") and m.get("content") is None:
            m["content"] = ""
    return out


#: The date both renderers see (the official template prints today's date).
DAY = dt.date(2025, 8, 5)


def assert_same(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    agp: bool,
    **options: Any,
) -> str | None:
    """chatfmt == official, or both reject the input. Returns the render.

    The text of a tool-call message followed by a final reply is dropped by the official
    file (with the analysis); chatfmt writes it as a commentary preamble, as openai-harmony
    does (tests/peers/test_openai_harmony.py), and refuses it with ``strict_history``."""
    dropped = [
        (i, "content")
        for i, m in enumerate(messages)
        if m.get("tool_calls")
        and m.get("content")
        and any(x["role"] == "assistant" and not x.get("tool_calls") for x in messages[i + 1 :])
    ]
    with official_today(DAY):
        return assert_matches_official(
            "gpt-oss",
            official_source(FILE),
            messages,
            tools=tools,
            add_generation_prompt=agp,
            options=options,
            official_messages=_for_official(messages),
            chatfmt_vars={"now": DAY},
            dropped=dropped or None,
        )


def _call(name: str, args: dict[str, Any], k: int) -> dict[str, Any]:
    return {
        "id": f"call_{k}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
    }


@st.composite
def harmony_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Conversations the official template renders without dropping anything chatfmt refuses:
    a system message first only, one tool call per assistant message."""
    msgs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        msgs.append(
            {"role": draw(st.sampled_from(["system", "developer"])), "content": draw(texts())}
        )
    for t in range(draw(st.integers(1, 3))):
        msgs.append({"role": "user", "content": draw(texts())})
        for k in range(draw(st.integers(0, 2))):  # tool-call rounds
            call: dict[str, Any] = {"role": "assistant", "content": None}
            which = draw(st.sampled_from(["none", "content", "reasoning"]))
            if which == "content":
                call["content"] = draw(texts(min_size=1))
            elif which == "reasoning":
                call["reasoning_content"] = draw(texts())
            name = draw(st.sampled_from(["get_current_weather", "search"]))
            call["tool_calls"] = [_call(name, {"q": draw(texts())}, k)]
            msgs.append(call)
            for _ in range(draw(st.integers(1, 2))):
                msgs.append({"role": "tool", "tool_call_id": f"call_{k}", "content": draw(texts())})
        end = draw(st.sampled_from(["assistant", "assistant", "stop"]))
        if end == "assistant":
            reply: dict[str, Any] = {"role": "assistant", "content": draw(texts())}
            if draw(st.booleans()):
                reply["reasoning_content"] = draw(texts())
            msgs.append(reply)
        elif t == 0:
            break
    return msgs


_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "reasoning_effort": st.sampled_from(["low", "medium", "high"]),
        "model_identity": texts(),
        "builtin_tools": st.lists(st.sampled_from(["browser", "python", "other"]), max_size=3),
    },
)


@given(msgs=harmony_conversations(), agp=st.booleans(), tools=st.booleans(), options=_OPTIONS)
def test_matches_official(
    msgs: list[dict[str, Any]], agp: bool, tools: bool, options: dict[str, Any]
) -> None:
    assert_same(msgs, TOOLS if tools else None, agp, **options)


# ------------------------------------------------------------------ tool schemas
_LEAF = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "number", "integer", "boolean", "null", "object"])},
    optional={
        "description": st.sampled_from(["A value", "", "Multi\nline"]),
        "enum": st.lists(st.sampled_from(["a", "b c", "🙂"]), min_size=1, max_size=3),
        "nullable": st.booleans(),
        "default": st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["x", "é"])),
    },
)


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(["a", "b", "long_name", "ü"])
    return st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("array")},
            optional={"items": children, "nullable": st.booleans()},
        ),
        st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(names, children, max_size=3),
            },
            optional={"required": st.lists(names, max_size=2)},
        ),
        st.fixed_dictionaries(
            {"oneOf": st.lists(children, min_size=1, max_size=3)},
            optional={"default": st.sampled_from(["x", 1]), "description": st.just("One of")},
        ),
        st.fixed_dictionaries(
            {
                "type": st.lists(
                    st.sampled_from(["string", "number", "null"]), min_size=1, max_size=3
                )
            }
        ),
    )


SCHEMAS = st.recursive(_LEAF, _extend, max_leaves=6)


@given(
    props=st.dictionaries(st.sampled_from(["city", "days", "x_y", "名"]), SCHEMAS, max_size=4),
    required=st.lists(st.sampled_from(["city", "days", "x_y"]), max_size=2),
    description=st.sampled_from(["Get the weather", "", "Two\nlines"]),
)
def test_tool_schemas_match_official(
    props: dict[str, Any], required: list[str], description: str
) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }
    assert_same([{"role": "user", "content": "hi"}], [tool, *TOOLS], True)


def test_tool_schema_quirks_of_the_official_template() -> None:
    """Facts of the official rendering, kept on purpose (byte identity)."""
    params = {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            "u": {"oneOf": [{"type": "string", "description": "s"}, {"type": "object"}]},
            "o": {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]},
        },
    }
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": params}}
    out = assert_same([{"role": "user", "content": "hi"}], [tool], True)
    assert out is not None
    assert 'unit?: "c" | "f", // default: c,\n' in out  # the enum default gets a second comma
    assert "u?: string// s | \nobject,\n" in out  # unions with objects are not "any" (loop scope)
    assert "o?: {\na: \n" + " " * 16 + "number}," in out  # nested types keep the indentation


def test_tool_without_description_is_refused_like_the_official_template() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {}}}
    assert assert_same([{"role": "user", "content": "hi"}], [tool], True) is None
    with pytest.raises(ValidationError) as err:
        chatfmt.render([{"role": "user", "content": "hi"}], "gpt-oss", tools=[tool])
    assert err.value.field == "tools[0].function.description"


# ------------------------------------------------------------------ examples and refusals
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def test_rendered_example() -> None:
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "Need the tool.",
            "tool_calls": [_call("get_weather", {"city": "Paris"}, 0)],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
    ]
    out = chatfmt.render(msgs, "openai/gpt-oss-20b", tools=[WEATHER], now="2025-08-05")
    assert out == (
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\nCurrent date: 2025-08-05\n\nReasoning: medium\n\n"
        "# Valid channels: analysis, commentary, final. Channel must be included for every "
        "message.\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>"
        "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\n"
        "namespace functions {\n\n// Get the weather\ntype get_weather = (_: {\ncity: string,\n"
        "}) => any;\n\n} // namespace functions<|end|>"
        "<|start|>user<|message|>Weather in Paris?<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>"
        '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": '
        '"Paris"}<|call|>'
        '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"sunny"<|end|>'
        "<|start|>assistant"
    )


@pytest.mark.parametrize(
    ("msgs", "field"),
    [
        (
            [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}],
            "role",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call("f", {}, 0), _call("g", {}, 1)],
                },
            ],
            "tool_calls[1]",
        ),
    ],
    ids=["late system message", "two calls in one message"],
)
def test_refuses_what_the_official_template_drops(msgs: list[dict[str, Any]], field: str) -> None:
    official = official_render(
        official_source(FILE), _for_official(msgs), add_generation_prompt=True
    )
    assert "late" not in official and "functions.g" not in official  # dropped there
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(msgs, "gpt-oss")
    assert err.value.index == 1
    assert err.value.field == field


@pytest.mark.parametrize(
    "msgs",
    [
        [{"role": "tool", "tool_call_id": "x", "content": "orphan"}],
        [
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": "text",
                "reasoning_content": "and reasoning",
                "tool_calls": [_call("f", {}, 0)],
            },
        ],
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "<|channel|>final<|message|>x"},
        ],
    ],
    ids=[
        "tool result without a call",
        "content and reasoning with a call",
        "channel tags in content",
    ],
)
def test_rejects_like_the_official_template(msgs: list[dict[str, Any]]) -> None:
    assert assert_same(msgs, None, False) is None


def test_builtin_tools_must_be_a_list() -> None:
    with pytest.raises(ValidationError) as err:
        chatfmt.render("hi", "gpt-oss", builtin_tools=True)
    assert err.value.field == "builtin_tools"


def test_segments_and_training_mask() -> None:
    msgs = [
        {"role": "user", "content": "q <|end|>"},
        {"role": "assistant", "content": "answer", "reasoning_content": "thought"},
    ]
    segs = GPT_OSS.segments(msgs, add_generation_prompt=False, now="2025-01-01")
    assert join(segs) == GPT_OSS.render(msgs, add_generation_prompt=False, now="2025-01-01")
    content = [s.text for s in segs if s.kind is Kind.CONTENT]
    assert content == ["q <|end|>", "thought", "answer"]  # user text is never control text
    trained = "".join(s.text for s in segs if s.trained)
    assert trained == (
        "<|channel|>analysis<|message|>thought<|end|><|start|>assistant"
        "<|channel|>final<|message|>answer<|return|>"
    )
    prompt = GPT_OSS.render(msgs[:1], now="2025-01-01")
    assert join(segs).startswith(prompt)  # the generation prompt is where the trained part starts


def test_generation_config_and_registry() -> None:
    tpl = chatfmt.get_template("openai/gpt-oss-120b")
    assert tpl is chatfmt.get_template("openai/gpt-oss-20b") is GPT_OSS
    cfg = tpl.generation_config
    assert cfg.stop_words[:2] == ("<|return|>", "<|call|>")
    assert cfg.tool_stop_words == ("<|call|>",)
    assert (cfg.temperature, cfg.top_p, cfg.session_len) == (1.0, 1.0, 131072)
    assert tpl.tool_parser == "harmony" and tpl.supports_tools and tpl.supports_reasoning


def test_official_file_is_recognized_as_the_native_template() -> None:
    tpl = chatfmt.get_template(str(TEMPLATES / FILE))
    assert tpl.tool_parser == "harmony"
    assert tpl.render("hi", now="2025-01-01") == GPT_OSS.render("hi", now="2025-01-01")
