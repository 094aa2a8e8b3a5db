"""Llama 2 / Llama 3 / 3.1 / 3.2 / 3.3: byte-identity with the official templates, the seed layout, segments."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_matches_official, official_today
from _segments import assert_follow_up_continues, assert_segments_consistent
from chatfmt.errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from chatfmt.families.llama.templates import strftime_d_b_y
from chatfmt.segments import Kind

from _support import TOOLS, conversations, official_render, texts

pytestmark = pytest.mark.usefixtures("shared_dir")

L2_VARS = {"bos_token": "<s>", "eos_token": "</s>"}
L3_VARS = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
FIXED_DAY = dt.date(2025, 3, 7)


def _data_source(filename: str) -> str:
    from importlib.resources import files

    return (files("chatfmt") / "data" / "templates" / filename).read_text(encoding="utf-8")


def dropped(
    name: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    options: dict[str, Any],
) -> set[tuple[int, str]]:
    """(index, field) of the data the official template would drop without an error."""
    lost: set[tuple[int, str]] = set()
    head = 1 if messages and messages[0]["role"] == "system" else 0
    rest = messages[head:]
    has_system = bool(head and messages[0]["content"])
    if name.startswith("llama2") and has_system and not any(m["role"] == "user" for m in rest):
        lost.add((0, "content"))  # the system prompt lives in the first user turn
    if name == "llama2":
        lost |= {(i, "role") for i, m in enumerate(messages) if i >= head and m["role"] == "system"}
    if name.startswith("llama3."):
        for i, m in enumerate(messages):
            if m.get("tool_calls") and (m.get("content") or "").strip():
                lost.add((i, "content"))  # only the call is written
        in_user = tools and options.get("tools_in_user_message", True) and rest
        if in_user and (rest[0]["role"] != "user" or rest[0].get("tool_calls")):
            lost.add((head, "role"))  # written as the user turn
    return lost


def check_same(
    name: str,
    filename: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    template_vars: dict[str, Any] | None = None,
    now: dt.date | None = None,
    **options: Any,
) -> str | None:
    """Render with chatfmt and the official template; equal output (returned), or both raise,
    or chatfmt refuses (naming message and field) what the official template would drop
    silently (None)."""
    return assert_matches_official(
        name,
        _data_source(filename),
        messages,
        tools=tools,
        add_generation_prompt=add_generation_prompt,
        options=options,
        official_vars=template_vars,
        chatfmt_vars={"now": now},
        dropped=dropped(name, messages, tools, options),
        refusal=(UnsupportedFeatureError, RoleOrderError),
    )


def test_official_files_are_shipped_unchanged() -> None:
    for name in (
        "meta-llama-Llama-3.1-8B-Instruct.jinja",
        "meta-llama-Llama-3.2-3B-Instruct.jinja",
        "meta-llama-Llama-3.3-70B-Instruct.jinja",
    ):
        from _support import official_source

        assert _data_source(name) == official_source(name)
    import json as _json

    from _support import SHARED

    cfg = _json.loads(
        (SHARED / "tokenizers" / "llama3_1" / "tokenizer_config.json").read_text(encoding="utf-8")
    )
    assert _data_source("meta-llama-Meta-Llama-3-8B-Instruct.jinja") == cfg["chat_template"]
    for name in ("llama2", "llama3", "llama3.1", "llama3.2", "llama3.3"):
        for f in chatfmt.get_template(name).official_templates:
            assert _data_source(f)


# ----------------------------------------------------------------------------- strategies
@st.composite
def loose_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Mostly valid chats, sometimes with broken alternation or a late system message."""
    if draw(st.integers(0, 3)):
        return draw(conversations(end_with=draw(st.sampled_from(["user", "assistant"]))))[
            "messages"
        ]
    roles = draw(st.lists(st.sampled_from(["system", "user", "assistant"]), min_size=1, max_size=5))
    return [{"role": r, "content": draw(texts())} for r in roles]


# ----------------------------------------------------------------------------- Llama 2
@given(loose_conversations(), st.booleans())
def test_llama2_matches_official(messages: list[dict[str, Any]], agp: bool) -> None:
    check_same(
        "llama2",
        "meta-llama-Llama-2-7b-chat-hf.jinja",
        messages,
        add_generation_prompt=agp,
        template_vars=L2_VARS,
    )


def test_llama2_known_strings() -> None:
    tpl = chatfmt.get_template("meta-llama/Llama-2-7b-chat-hf")
    assert tpl.name == "llama2"
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": " Hi "},
        {"role": "assistant", "content": " Hello! "},
        {"role": "user", "content": "Bye"},
    ]
    assert tpl.render(msgs) == (
        "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello! </s><s>[INST] Bye [/INST]"
    )
    with pytest.raises(RoleOrderError) as err:
        tpl.render([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert err.value.index == 1
    assert "must alternate" in str(err.value)


def test_llama2_rejects_tools_with_index() -> None:
    tpl = chatfmt.get_template("llama2")
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": "{}"}}],
        },
    ]
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(msgs)
    assert err.value.index == 1


# ----------------------------------------------------------------------------- seed layout
SEED_SINGLE = (
    "<s>[INST] <<SYS>>\n"
    "Your are an expert on C++ programing, help to answer user's question.\n"
    "<</SYS>>\n"
    "Please give me the C++ style code to return all the Fibonacci numbers under 100. \n"
    "[/INST]\n"
)


def test_seed_single_turn_example() -> None:
    tpl = chatfmt.get_template("llama2-seed")
    msgs = [
        {
            "role": "system",
            "content": "Your are an expert on C++ programing, help to answer user's question.",
        },
        {
            "role": "user",
            "content": "Please give me the C++ style code to return all the Fibonacci numbers under 100. ",
        },
    ]
    assert tpl.render(msgs) == SEED_SINGLE
    assert tpl.render(msgs, add_generation_prompt=False) == SEED_SINGLE


def test_seed_multi_turn_example() -> None:
    # The seed's schematic with {一段角色定位的话} etc. placeholders; its `<\s>` is a typo of `</s>`.
    tpl = chatfmt.get_template("llama2-seed")
    msgs = [
        {"role": "system", "content": "{一段角色定位的话}"},
        {"role": "user", "content": "{一段用户的话}"},
        {"role": "assistant", "content": "{一段助理的话}"},
        {"role": "user", "content": "{一段用户的话}"},
        {"role": "assistant", "content": "{一段助理的话}"},
    ]
    expected = (
        "<s>[INST] <<SYS>>\n{一段角色定位的话}\n<</SYS>>\n{一段用户的话}\n[/INST]\n{一段助理的话}\n</s>\n"
        "<s>[INST]\n{一段用户的话}\n[/INST]\n{一段助理的话}\n</s>\n"
    )
    assert tpl.render(msgs, add_generation_prompt=False) == expected
    first_turn = "<s>[INST] <<SYS>>\n{一段角色定位的话}\n<</SYS>>\n{一段用户的话}\n[/INST]\n{一段助理的话}\n</s>\n"
    assert tpl.render(msgs[:3], add_generation_prompt=False) == first_turn
    segs = tpl.segments(msgs, add_generation_prompt=False)
    trained = "".join(s.text for s in segs if s.trained)
    assert trained == "{一段助理的话}\n</s>{一段助理的话}\n</s>"


def test_seed_without_system_and_errors() -> None:
    tpl = chatfmt.get_template("llama2-seed")
    assert tpl.render([{"role": "user", "content": "hi"}]) == "<s>[INST]\nhi\n[/INST]\n"
    with pytest.raises(RoleOrderError) as err:
        tpl.render([{"role": "assistant", "content": "x"}])
    assert err.value.index == 0


# ----------------------------------------------------------------------------- Llama 3
@given(loose_conversations(), st.booleans())
def test_llama3_matches_official(messages: list[dict[str, Any]], agp: bool) -> None:
    check_same(
        "llama3",
        "meta-llama-Meta-Llama-3-8B-Instruct.jinja",
        messages,
        add_generation_prompt=agp,
        template_vars=L3_VARS,
    )


def test_llama3_lookup_and_config() -> None:
    assert chatfmt.get_template("meta-llama/Meta-Llama-3-8B-Instruct").name == "llama3"
    assert chatfmt.get_template("Meta-Llama-3-70B-Instruct").name == "llama3"
    assert chatfmt.get_template("meta-llama/Meta-Llama-3.1-8B-Instruct").name == "llama3.1"
    assert chatfmt.get_template("meta-llama/Llama-3.2-1B-Instruct").name == "llama3.2"
    assert chatfmt.get_template("Llama-3.3-70B-Instruct").name == "llama3.3"
    assert chatfmt.get_template("/models/Llama-3.2-11B-Vision-Instruct").name == "llama3.2"
    cfg = chatfmt.get_template("llama3.1").generation_config
    assert "<|eot_id|>" in cfg.stop_words and cfg.tool_stop_words == ("<|eom_id|>",)
    assert chatfmt.get_template("llama3.1").tool_parser == "llama3_json"


# ----------------------------------------------------------------------------- Llama 3.1 / 3.3
LLAMA31_FILES = [
    ("llama3.1", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
    ("llama3.3", "meta-llama-Llama-3.3-70B-Instruct.jinja"),
]


@st.composite
def llama31_options(draw: st.DrawFn) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if draw(st.booleans()):
        opts["tools_in_user_message"] = draw(st.booleans())
    if draw(st.booleans()):
        opts["date_string"] = draw(st.sampled_from(["1 Jan 2025", "", "今天"]))
    if draw(st.integers(0, 3)) == 0:
        opts["builtin_tools"] = draw(
            st.lists(
                st.sampled_from(["brave_search", "wolfram_alpha", "search"]),
                max_size=2,
                unique=True,
            )
        )
    return opts


@pytest.mark.parametrize(("name", "filename"), LLAMA31_FILES)
@given(
    conv=conversations(tools=True, end_with="any", max_turns=3),
    agp=st.booleans(),
    opts=llama31_options(),
    with_tools=st.booleans(),
)
def test_llama31_matches_official(
    name: str,
    filename: str,
    conv: dict[str, Any],
    agp: bool,
    opts: dict[str, Any],
    with_tools: bool,
) -> None:
    tools = conv["tools"] if with_tools else None
    check_same(
        name,
        filename,
        conv["messages"],
        tools=tools,
        add_generation_prompt=agp,
        template_vars=L3_VARS,
        **opts,
    )


def test_llama31_builtin_python_tag_and_eom() -> None:
    msgs = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "brave_search", "arguments": {"query": "Paris weather"}},
                }
            ],
        },
        {"role": "ipython", "content": "sunny"},
    ]
    opts = {"builtin_tools": ["brave_search", "wolfram_alpha"]}
    assert (
        check_same("llama3.1", LLAMA31_FILES[0][1], msgs, template_vars=L3_VARS, **opts) is not None
    )
    out = chatfmt.get_template("llama3.1").render(msgs, **opts)
    assert "Environment: ipython\nTools: brave_search, wolfram_alpha\n\n" in out
    assert '<|python_tag|>brave_search.call(query="Paris weather")<|eom_id|>' in out
    assert '<|start_header_id|>ipython<|end_header_id|>\n\n"sunny"<|eot_id|>' in out


def test_llama31_code_interpreter_tool_type() -> None:
    msgs = [
        {"role": "user", "content": "2+2?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"type": "code_interpreter", "code_interpreter": {"input": "print(2+2)"}}
            ],
        },
    ]
    out = chatfmt.get_template("llama3.1").render(msgs, tools=[{"type": "code_interpreter"}])
    expected = official_render(
        _data_source(LLAMA31_FILES[0][1]),
        [
            msgs[0],
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {
                            "name": "code_interpreter",
                            "arguments": {"code": "print(2+2)"},
                        },
                    }
                ],
            },
        ],
        builtin_tools=["code_interpreter"],
        **L3_VARS,
    )
    assert out == expected
    assert "Environment: ipython\nTools: \n\n" in out
    assert '<|python_tag|>code_interpreter.call(code="print(2+2)")<|eom_id|>' in out


def test_llama31_errors_name_the_index() -> None:
    tpl = chatfmt.get_template("llama3.1")
    calls = [{"type": "function", "function": {"name": "search", "arguments": "{}"}}] * 2
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render([{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": calls}])
    assert err.value.index == 1 and "single tool-calls" in str(err.value)
    with pytest.raises(ValidationError, match="no first user message"):
        tpl.render([{"role": "system", "content": "s"}], tools=TOOLS)


def test_llama31_segments_mark_tool_call_trained() -> None:
    msgs = [
        {"role": "user", "content": "w?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query": "<|eot_id|>"}'},
                }
            ],
        },
        {"role": "tool", "content": "r"},
    ]
    segs = chatfmt.get_template("llama3.1").segments(msgs, tools=TOOLS)
    trained = "".join(s.text for s in segs if s.trained)
    assert trained == '{"name": "search", "parameters": {"query": "<|eot_id|>"}}<|eot_id|>'
    # the look-alike inside the arguments is content, never control
    assert all('<|eot_id|>"' not in s.text for s in segs if s.kind is Kind.CONTROL)
    tool_json = json.dumps(TOOLS[0], indent=4)
    assert any(tool_json in s.text for s in segs if s.kind is Kind.CONTENT)


# ----------------------------------------------------------------------------- Llama 3.2
@given(
    conv=conversations(tools=True, end_with="any", max_turns=3),
    agp=st.booleans(),
    in_user=st.booleans(),
    with_tools=st.booleans(),
)
def test_llama32_matches_official(
    conv: dict[str, Any], agp: bool, in_user: bool, with_tools: bool
) -> None:
    tools = conv["tools"] if with_tools else None
    with official_today(FIXED_DAY):
        check_same(
            "llama3.2",
            "meta-llama-Llama-3.2-3B-Instruct.jinja",
            conv["messages"],
            tools=tools,
            add_generation_prompt=agp,
            template_vars=L3_VARS,
            now=FIXED_DAY,
            tools_in_user_message=in_user,
        )


@pytest.mark.parametrize("day", [dt.date(2024, 7, 26), dt.date(2025, 1, 5), dt.date(1999, 12, 31)])
def test_llama32_date_is_strftime(day: dt.date) -> None:
    assert strftime_d_b_y(day) == dt.datetime(day.year, day.month, day.day).strftime("%d %b %Y")
    out = chatfmt.get_template("llama3.2").render([{"role": "user", "content": "hi"}], now=day)
    assert f"Today Date: {strftime_d_b_y(day)}\n\n" in out
    assert (
        chatfmt.get_template("llama3.2")
        .render("hi", now=day, date_string="X")
        .count("Today Date: X\n")
        == 1
    )


def test_llama32_has_no_builtin_tools() -> None:
    with pytest.raises(UnsupportedFeatureError, match="has no built-in tools") as err:
        chatfmt.get_template("llama3.2").render("hi", builtin_tools=["brave_search"])
    assert (err.value.index, err.value.field) == (None, "tools")


# ----------------------------------------------------------------------------- shared properties
ALL = ["llama2", "llama2-seed", "llama3", "llama3.1", "llama3.2", "llama3.3"]


@pytest.mark.parametrize("name", ALL)
@given(conv=conversations(end_with="any", max_turns=3), agp=st.booleans())
def test_segments_invariants(name: str, conv: dict[str, Any], agp: bool) -> None:
    tpl = chatfmt.get_template(name)
    msgs = conv["messages"]
    assert_segments_consistent(tpl, msgs, strip=True, add_generation_prompt=agp, now=FIXED_DAY)


@pytest.mark.parametrize("name", ALL)
@given(history=conversations(end_with="assistant", max_turns=2), new=texts())
def test_sequence_start_false_continues_the_full_render(
    name: str, history: dict[str, Any], new: str
) -> None:
    tpl = chatfmt.get_template(name)
    msgs = history["messages"]
    new_msgs = [{"role": "user", "content": new}]
    assert assert_follow_up_continues(tpl, msgs + new_msgs, len(msgs) - 1, now=FIXED_DAY)


def test_continue_final_message() -> None:
    tpl = chatfmt.get_template("llama3")
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hel"}]
    assert tpl.render(msgs, continue_final_message=True).endswith("<|end_header_id|>\n\nHel")
