"""Qwen3-Coder and Qwen3.5 native templates: byte-identity with the official Jinja templates
(varied conversations: system, tools with extra schema keys, calls with typed arguments,
tool results, reasoning, multi-turn, ``enable_thinking``), and their wiring."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import (
    assert_conv_matches_official,
    null_call_content_as_empty,
)
from chatfmt import Template, UnsupportedFeatureError, ValidationError

from _support import TOOLS, conversations, official_render, official_source, texts

CODER_FILE = "Qwen3-Coder.jinja"
QWEN35_FILE = "Qwen3.5-4B.jinja"

#: A tool whose schema uses every shape the Qwen3-Coder tool listing prints.
RICH_TOOL = {
    "type": "function",
    "function": {
        "name": "edit_file",
        "description": "  Edit a file.\n",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The path", "minLength": 1},
                "mode": {"type": ["string", "null"], "enum": ["a", "w"], "default": None},
                "lines": {"type": "array", "items": {"type": "integer"}},
                "force": {"type": "boolean", "default": False},
                "ratio": {"type": "number", "maximum": 1.5},
                "opts": {"type": "object", "properties": {"k": {"type": "string"}}},
                "bare": {},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
ALL_TOOLS = [*TOOLS, RICH_TOOL]

#: Argument values of every JSON type (the templates print them as JSON or Python ``str``).
_values = st.one_of(
    texts(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
    st.lists(st.one_of(st.integers(0, 9), texts()), max_size=3),
    st.dictionaries(
        st.sampled_from(["a", "b", "ü"]), st.one_of(st.integers(0, 9), texts()), max_size=2
    ),
)


@st.composite
def typed_calls(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = ["path", "mode", "lines", "force", "ratio", "opts", "x y", "<k>"]
    out = []
    for k in range(draw(st.integers(1, 3))):
        args = draw(st.dictionaries(st.sampled_from(keys), _values, max_size=4))
        out.append(
            {
                "id": f"call_{k}",
                "type": "function",
                "function": {
                    "name": "edit_file",
                    "arguments": json.dumps(args, ensure_ascii=False),
                },
            }
        )
    return out


@st.composite
def coder_conversations(draw: st.DrawFn, reasoning: bool = False) -> dict[str, Any]:
    conv = draw(conversations(max_turns=3, end_with="any", tools=True, reasoning=reasoning))
    msgs = conv["messages"]
    if draw(st.booleans()):  # a turn with typed arguments, its results, a reply
        calls = draw(typed_calls())
        msgs.append({"role": "user", "content": draw(texts())})
        msgs.append(
            {
                "role": "assistant",
                "content": draw(st.one_of(st.none(), texts())),
                "tool_calls": calls,
            }
        )
        msgs += [{"role": "tool", "tool_call_id": c["id"], "content": draw(texts())} for c in calls]
    tools = draw(st.sampled_from([None, [], TOOLS, ALL_TOOLS]))
    return {"messages": msgs, "tools": tools}


def _refused(name: str, msgs: list[dict[str, Any]]) -> set[tuple[int, str]]:
    """(index, field) the official template drops silently and chatfmt refuses: Qwen3-Coder
    has no reasoning format."""
    if name != "qwen3-coder":
        return set()
    return {(i, "reasoning_content") for i, m in enumerate(msgs) if m.get("reasoning_content")}


def assert_same(
    tpl: Template, source: str, conv: dict[str, Any], agp: bool, **options: Any
) -> str | None:
    """chatfmt == official template, or both reject the conversation (or chatfmt refuses
    what the official one drops). Returns the render."""
    return assert_conv_matches_official(
        tpl,
        source,
        conv,
        agp,
        options=options,
        official_fallback=null_call_content_as_empty,
        dropped=_refused(tpl.name, conv["messages"]),
        segments=True,
    )


# ------------------------------------------------------------------ Qwen3-Coder
@given(conv=coder_conversations(reasoning=True), agp=st.booleans())
def test_qwen3_coder_matches_official(conv: dict[str, Any], agp: bool) -> None:
    assert_same(chatfmt.get_template("qwen3-coder"), official_source(CODER_FILE), conv, agp)


CODER_CASES: list[dict[str, Any]] = [
    {"messages": [{"role": "user", "content": "hi"}], "tools": None},
    {
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "tools": ALL_TOOLS,
    },
    {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "  Let me look.  ",
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {
                            "name": "edit_file",
                            "arguments": json.dumps(
                                {
                                    "path": "a.py",
                                    "lines": [1, 2],
                                    "force": True,
                                    "ratio": 0.5,
                                    "opts": {"k": "v"},
                                    "mode": None,
                                }
                            ),
                        },
                    },
                    {
                        "id": "b",
                        "type": "function",
                        "function": {"name": "search", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "done"},
            {"role": "tool", "tool_call_id": "b", "content": "[]"},
            {"role": "assistant", "content": "Edited."},
            {"role": "system", "content": "late system"},
            {"role": "user", "content": "thanks"},
        ],
        "tools": ALL_TOOLS,
    },
    # an assistant reply with an empty call list is a plain reply
    {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "x", "tool_calls": []},
        ],
        "tools": None,
    },
]


@pytest.mark.parametrize("conv", CODER_CASES)
@pytest.mark.parametrize("agp", [True, False])
def test_qwen3_coder_examples_match_official(conv: dict[str, Any], agp: bool) -> None:
    assert (
        assert_same(chatfmt.get_template("qwen3-coder"), official_source(CODER_FILE), conv, agp)
        is not None
    )


def test_qwen3_coder_refuses_what_it_cannot_write() -> None:
    tpl = chatfmt.get_template("Qwen/Qwen3-Coder-480B-A35B-Instruct")
    assert tpl.name == "qwen3-coder" and tpl.tool_parser == "qwen3_coder"
    q = {"role": "user", "content": "q"}
    with pytest.raises(UnsupportedFeatureError, match="would drop it silently") as err:
        tpl.render([q, {"role": "assistant", "content": "a", "reasoning_content": "r"}])
    assert (err.value.index, err.value.field) == (1, "reasoning_content")
    call = {"type": "function", "function": {"name": "f", "arguments": "[1]"}}
    with pytest.raises(ValidationError, match="arguments must be a JSON object") as err:
        tpl.render([q, {"role": "assistant", "content": None, "tool_calls": [call]}])
    assert (err.value.index, err.value.field) == (1, "tool_calls[0].function.arguments")
    with pytest.raises(ValidationError, match="needs at least one message") as err:
        tpl.render([])
    assert (err.value.index, err.value.field) == (None, "messages")


def test_qwen3_coder_segments_train_the_reply() -> None:
    tpl = chatfmt.get_template("qwen3-coder")
    conv = CODER_CASES[2]
    segs = tpl.segments(conv["messages"], tools=conv["tools"], add_generation_prompt=False)
    trained = "".join(s.text for s in segs if s.trained)
    assert "<function=edit_file>\n<parameter=path>\na.py\n</parameter>\n" in trained
    assert "Edited.<|im_end|>" in trained
    assert "done" not in trained and "# Tools" not in trained


# ------------------------------------------------------------------ Qwen3.5
@given(
    conv=coder_conversations(reasoning=True),
    agp=st.booleans(),
    thinking=st.sampled_from([None, True, False]),
)
def test_qwen35_matches_official(conv: dict[str, Any], agp: bool, thinking: bool | None) -> None:
    options = {} if thinking is None else {"enable_thinking": thinking}
    assert_same(chatfmt.get_template("qwen3.5"), official_source(QWEN35_FILE), conv, agp, **options)


QWEN35_CASES: list[dict[str, Any]] = [
    # reasoning given as a field, and inline in the content, before and after the last query
    {
        "messages": [
            {"role": "system", "content": "  sys  "},
            {"role": "user", "content": "q1"},
            {
                "role": "assistant",
                "content": "<think>\nold\n</think>\n\nA1",
                "reasoning_content": None,
            },
            {"role": "user", "content": " q2 "},
            {
                "role": "assistant",
                "content": "Checking.",
                "reasoning_content": "\nneed data\n",
                "tool_calls": CODER_CASES[2]["messages"][1]["tool_calls"],
            },
            {"role": "tool", "tool_call_id": "a", "content": " done "},
            {"role": "tool", "tool_call_id": "b", "content": "[]"},
            {"role": "assistant", "content": "plan</think>\n\nEdited."},
        ],
        "tools": ALL_TOOLS,
    },
    # a user message that only carries tool responses is not the query
    {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "<tool_response>\nx\n</tool_response>"},
            {"role": "assistant", "content": "b"},
        ],
        "tools": None,
    },
    {
        "messages": [{"role": "system", "content": ""}, {"role": "user", "content": "hi"}],
        "tools": TOOLS,
    },
]


@pytest.mark.parametrize("conv", QWEN35_CASES)
@pytest.mark.parametrize("options", [{}, {"enable_thinking": False}])
@pytest.mark.parametrize("agp", [True, False])
def test_qwen35_examples_match_official(
    conv: dict[str, Any], options: dict[str, Any], agp: bool
) -> None:
    tpl = chatfmt.get_template("qwen3.5")
    assert assert_same(tpl, official_source(QWEN35_FILE), conv, agp, **options) is not None


@pytest.mark.parametrize(
    ("messages", "where", "problem"),
    [
        ([], (None, "messages"), "needs at least one message"),
        (
            [{"role": "user", "content": "<tool_response>x</tool_response>"}],
            (None, "messages"),
            "needs a user query",
        ),
        (
            [{"role": "user", "content": "q"}, {"role": "system", "content": "late"}],
            (1, "role"),
            "system message only at the beginning",
        ),
    ],
)
def test_qwen35_rejects_what_the_official_template_rejects(
    messages: list[dict[str, Any]], where: tuple[int | None, str], problem: str
) -> None:
    with pytest.raises(Exception):  # noqa: B017  (the official template raises)
        official_render(official_source(QWEN35_FILE), messages)
    with pytest.raises(ValidationError, match=problem) as err:
        chatfmt.render(messages, "qwen3.5")
    assert (err.value.index, err.value.field) == where


def test_qwen35_wiring() -> None:
    tpl = chatfmt.get_template("Qwen/Qwen3.5-35B-A3B")
    assert (tpl.name, tpl.tool_parser, tpl.reasoning_parser) == ("qwen3.5", "qwen3_coder", "qwen3")
    assert chatfmt.get_template("Qwen/Qwen3-Coder-30B-A3B-Instruct").name == "qwen3-coder"
    assert chatfmt.get_template("Qwen/Qwen3-8B").name == "qwen3"  # the Qwen3 pattern still wins
    assert chatfmt.render([{"role": "user", "content": "x"}], "qwen3.5").endswith(
        "<|im_start|>assistant\n<think>\n"
    )


# ------------------------------------------------------------------ render → parse
#: Values of each declared type of RICH_TOOL (the parser converts by this schema).
_TYPED = {
    "path": texts(),
    "lines": st.lists(st.integers(-5, 5), max_size=3),
    "force": st.booleans(),
    "ratio": st.floats(allow_nan=False, allow_infinity=False),
    "opts": st.dictionaries(st.sampled_from(["k", "é"]), texts(), max_size=2),
    "mode": st.one_of(st.none(), st.sampled_from(["a", "w"])),
}


@st.composite
def typed_arguments(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(sorted(_TYPED)), unique=True, max_size=4))
    return {k: draw(_TYPED[k]) for k in keys}


@pytest.mark.parametrize("name", ["qwen3-coder", "qwen3.5"])
@given(data=st.data())
def test_rendered_typed_calls_parse_back(name: str, data: st.DataObject) -> None:
    """Arguments of every declared type survive render → parse (the schema types them back)."""
    tpl = chatfmt.get_template(name)
    args = [data.draw(typed_arguments()) for _ in range(data.draw(st.integers(1, 2)))]
    content = data.draw(st.sampled_from(["", "Let me edit it."]))
    calls = [
        {
            "id": f"c{k}",
            "type": "function",
            "function": {"name": "edit_file", "arguments": json.dumps(a)},
        }
        for k, a in enumerate(args)
    ]
    history = [{"role": "user", "content": "edit"}]
    turn = {"role": "assistant", "content": content, "tool_calls": calls}
    options = {"enable_thinking": False} if name == "qwen3.5" else {}
    prompt = tpl.render(history, tools=[RICH_TOOL], **options)
    full = tpl.render([*history, turn], tools=[RICH_TOOL], add_generation_prompt=False, **options)
    assert full.startswith(prompt)
    out = full[len(prompt) :]
    if out.count("<|im_end|>") > 1 or "<|endoftext|>" in out:
        return  # a value quoting the end-of-turn marker needs token ids (docs/parsing.md)
    msg = chatfmt.parse(out, name, tools=[RICH_TOOL], **options)
    got = [json.loads(c["function"]["arguments"]) for c in msg["tool_calls"]]
    assert [c.get("error") for c in msg["tool_calls"]] == [None] * len(args)
    assert got == args
    assert (msg["content"] or "").strip() == content
