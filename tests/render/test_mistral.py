"""Mistral v1 / v3 / v3-tekken / v7 and Devstral: byte-identity with the official templates, ids, alternation."""

from __future__ import annotations

import copy
import datetime as dt
import json
import string
from importlib.resources import files
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_matches_official, official_today
from _segments import assert_follow_up_continues, assert_segments_consistent
from chatfmt.errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from chatfmt.segments import Kind

from _support import SHARED, TOOLS, conversations, official_source, texts

pytestmark = pytest.mark.usefixtures("shared_dir")

VARS = {"bos_token": "<s>", "eos_token": "</s>"}
DAY = dt.date(2025, 6, 20)
FILES = {
    "mistral-v1": "mistralai-Mistral-7B-Instruct-v0.2.jinja",
    "mistral-v3": "mistralai-Mistral-Large-Instruct-2407.jinja",
    "mistral-v3-tekken": "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "mistral-v7": "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "devstral": "unsloth-mistral-Devstral-Small-2507.jinja",
}
TOOL_TEMPLATES = ["mistral-v3", "mistral-v3-tekken", "mistral-v7", "devstral"]


def data_source(filename: str) -> str:
    return (files("chatfmt") / "data" / "templates" / filename).read_text(encoding="utf-8")


def dropped(name: str, messages: list[dict[str, Any]], tools: Any) -> set[tuple[int | None, str]]:
    """(index, field) of the data the official template would drop without an error."""
    lost: set[tuple[int | None, str]] = set()
    head = 1 if messages and messages[0]["role"] == "system" else 0
    rest = messages[head:]
    has_user = any(m["role"] == "user" for m in rest)
    if head and messages[0]["content"]:
        if name == "mistral-v1" and not has_user:
            lost.add((0, "content"))  # written into the first user turn
        if name.startswith("mistral-v3") and (not rest or rest[-1]["role"] != "user"):
            lost.add((0, "content"))  # written into the final user turn
    if name in ("mistral-v3", "mistral-v3-tekken", "mistral-v7"):
        if tools and not has_user:
            lost.add((None, "tools"))  # written before the last user turn
        for i, m in enumerate(messages):
            if m.get("tool_calls") and m.get("content"):
                lost.add((i, "content"))  # only the calls are written
    return lost


def check_same(
    name: str, messages: list[dict[str, Any]], *, tools: Any = None, agp: bool = True
) -> str | None:
    """Equal to the official render, or both raise, or chatfmt refuses (naming message and
    field) what the official template would drop silently."""
    with official_today(DAY):
        return assert_matches_official(
            name,
            data_source(FILES[name]),
            messages,
            tools=tools,
            add_generation_prompt=agp,
            official_vars=VARS,
            chatfmt_vars={"now": DAY},
            dropped=dropped(name, messages, tools),
        )


def test_shipped_files_are_the_official_ones() -> None:
    for name in ("mistral-v3-tekken", "mistral-v7", "devstral"):
        assert data_source(FILES[name]) == official_source(FILES[name])
    cases = json.loads(
        (SHARED / "reference" / "llamacpp_chat_template_cases.json").read_text(encoding="utf-8")
    )
    sources = {c["template_source"] for c in cases["cases"]}
    assert data_source(FILES["mistral-v1"]) in sources
    assert data_source(FILES["mistral-v3"]) in sources


def test_llamacpp_expected_outputs() -> None:
    cases = json.loads(
        (SHARED / "reference" / "llamacpp_chat_template_cases.json").read_text(encoding="utf-8")
    )
    conv = cases["conversation"]
    for case in cases["cases"]:
        for name, file in FILES.items():
            if case["template_source"] == data_source(file):
                out = chatfmt.get_template(name).render(conv)
                # llama.cpp rendered these with an empty bos_token
                assert out.removeprefix("<s>") == case["expected_output_jinja"], name


# ----------------------------------------------------------------------------- strategies
_ALNUM = string.ascii_letters + string.digits
valid_ids = st.text(st.sampled_from(_ALNUM), min_size=9, max_size=9)
invalid_ids = st.sampled_from(["call_0", "abc", "A1b2C3d4E5", "toolong123"])


@st.composite
def mistral_conversations(draw: st.DrawFn, *, tools: bool = True) -> dict[str, Any]:
    """Conversations whose tool-call ids are 9 alphanumerics (sometimes a wrong length)."""
    conv = copy.deepcopy(draw(conversations(tools=tools, end_with="any", max_turns=3)))
    pending: list[str] = []
    for m in conv["messages"]:
        for call in m.get("tool_calls") or ():
            call["id"] = draw(valid_ids if draw(st.integers(0, 9)) else invalid_ids)
            pending.append(call["id"])
        if m["role"] == "tool":
            m["tool_call_id"] = pending.pop(0) if pending else None
    return conv


@st.composite
def loose_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    if draw(st.integers(0, 3)):
        return draw(conversations(end_with="any"))["messages"]
    roles = draw(st.lists(st.sampled_from(["system", "user", "assistant"]), min_size=1, max_size=5))
    return [{"role": r, "content": draw(texts())} for r in roles]


# ----------------------------------------------------------------------------- differential
@given(messages=loose_conversations(), agp=st.booleans())
def test_v1_matches_official(messages: list[dict[str, Any]], agp: bool) -> None:
    check_same("mistral-v1", messages, agp=agp)


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
@given(conv=mistral_conversations(), with_tools=st.booleans())
def test_tool_templates_match_official(name: str, conv: dict[str, Any], with_tools: bool) -> None:
    check_same(name, conv["messages"], tools=conv["tools"] if with_tools else None)


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
@given(messages=loose_conversations())
def test_role_order_matches_official(name: str, messages: list[dict[str, Any]]) -> None:
    check_same(name, messages)


# ----------------------------------------------------------------------------- known strings and errors
TOOL_CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "abcDEF123",
                "type": "function",
                "function": {"name": "get_current_weather", "arguments": '{"location": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "abcDEF123", "content": "22C"},
    {"role": "assistant", "content": "22C in Paris."},
    {"role": "user", "content": "Thanks"},
]


def test_v3_places_tools_and_system_before_last_user() -> None:
    out = chatfmt.get_template("mistralai/Mistral-7B-Instruct-v0.3").render(
        TOOL_CHAT, tools=[TOOLS[1]]
    )
    assert out == (
        '<s>[INST] Weather in Paris?[/INST][TOOL_CALLS] [{"name": "get_current_weather", "arguments": '
        '{"location": "Paris"}, "id": "abcDEF123"}]</s>[TOOL_RESULTS] {"content": 22C, "call_id": "abcDEF123"}'
        '[/TOOL_RESULTS] 22C in Paris.</s>[AVAILABLE_TOOLS] [{"type": "function", "function": {"name": "search", '
        '"description": "Search the web", "parameters": {"type": "object", "properties": {"query": {"type": '
        '"string"}}, "required": ["query"]}}}][/AVAILABLE_TOOLS][INST] Be brief.\n\nThanks[/INST]'
    )


def test_v7_default_system_prompt_uses_now() -> None:
    tpl = chatfmt.get_template("mistralai/Mistral-Small-3.2-24B-Instruct-2506")
    out = tpl.render([{"role": "user", "content": "hi"}], now=dt.date(2030, 1, 2))
    assert out.startswith("<s>[SYSTEM_PROMPT]You are Mistral Small 3,")
    assert "The current date is 2030-01-02." in out and out.endswith("[INST]hi[/INST]")
    segs = tpl.segments([{"role": "user", "content": "hi"}])
    assert "You are Mistral Small 3" in segs[0].text and segs[0].kind is Kind.CONTROL
    calls = tpl.render(TOOL_CHAT, tools=TOOLS)
    assert (
        '[TOOL_CALLS]get_current_weather[CALL_ID]abcDEF123[ARGS]{"location": "Paris"}</s>' in calls
    )
    assert "[TOOL_RESULTS]abcDEF123[TOOL_CONTENT]22C[/TOOL_RESULTS]" in calls


@pytest.mark.parametrize("name", ["mistral-v3", "mistral-v3-tekken", "mistral-v7"])
@pytest.mark.parametrize("bad", ["call_1", "abc-def-1", "ÄbcDEF123", None])
def test_tool_call_ids_must_be_9_alphanumerics(name: str, bad: str | None) -> None:
    msgs = copy.deepcopy(TOOL_CHAT)
    call: dict[str, Any] = msgs[2]["tool_calls"][0]
    if bad is None:
        del call["id"]
    else:
        call["id"] = bad
    msgs[3]["tool_call_id"] = bad
    with pytest.raises(ValidationError) as err:
        chatfmt.get_template(name).render(msgs)
    assert err.value.index in (2, 3)
    assert "length 9" in str(err.value)


@pytest.mark.parametrize("name", ["mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7"])
def test_alternation_error_names_the_index(name: str) -> None:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
    ]
    with pytest.raises(RoleOrderError) as err:
        chatfmt.get_template(name).render(msgs)
    assert err.value.index == 2
    assert "must alternate user/assistant/user/assistant/..." in str(err.value)


def test_other_errors() -> None:
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.get_template("mistral-v3").render(
            [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}]
        )
    assert err.value.index == 1
    with pytest.raises(UnsupportedFeatureError, match="has no tool-call format") as err:
        chatfmt.get_template("mistral-v1").render(TOOL_CHAT)
    assert (err.value.index, err.value.field) == (2, "tool_calls")
    with pytest.raises(UnsupportedFeatureError, match="has no code-interpreter tool") as err:
        chatfmt.get_template("mistral-v3").render("hi", tools=[{"type": "code_interpreter"}])
    assert (err.value.index, err.value.field) == (None, "tools")


def test_lookup_and_config() -> None:
    assert chatfmt.get_template("mistralai/Mistral-7B-Instruct-v0.1").name == "mistral-v1"
    assert chatfmt.get_template("mistralai/Mistral-7B-Instruct-v0.2").name == "mistral-v1"
    assert chatfmt.get_template("mistralai/Mistral-7B-Instruct-v0.3").name == "mistral-v3"
    assert chatfmt.get_template("mistralai/Mistral-Nemo-Instruct-2407").name == "mistral-v3-tekken"
    assert chatfmt.get_template("mistralai/Mistral-Small-24B-Instruct-2501").name == "mistral-v7"
    assert chatfmt.get_template("Mistral-Small-3.1-24B-Instruct-2503").name == "mistral-v7"
    for name in TOOL_TEMPLATES:
        assert chatfmt.get_template(name).tool_parser == "mistral"
    assert chatfmt.get_template("mistral-v7").generation_config.stop_words == ("</s>",)


# ----------------------------------------------------------------------------- properties
ALL = list(FILES)


@pytest.mark.parametrize("name", ALL)
@given(conv=mistral_conversations(tools=False))
def test_segments_invariants(name: str, conv: dict[str, Any]) -> None:
    tpl = chatfmt.get_template(name)
    msgs = conv["messages"]
    lost = dropped(name, msgs, None)
    if lost:
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.segments(msgs, now=DAY)
        assert (err.value.index, err.value.field) in lost
        return
    assert_segments_consistent(tpl, msgs, now=DAY)


@pytest.mark.parametrize("name", ALL)
@given(history=conversations(system=False, end_with="assistant", max_turns=2), new=texts())
def test_sequence_start_false_continues_the_full_render(
    name: str, history: dict[str, Any], new: str
) -> None:
    tpl = chatfmt.get_template(name)
    msgs = history["messages"]
    new_msgs = [{"role": "user", "content": new}]
    assert assert_follow_up_continues(tpl, msgs + new_msgs, len(msgs) - 1, now=DAY)


# ----------------------------------------------------------------------------- mistral-common cross-check
def test_v3_tekken_agrees_with_mistral_common() -> None:
    """Mistral's own tokenizer library renders the same text (JSON tool results; see the note below)."""
    pytest.importorskip("mistral_common")
    from mistral_common.protocol.instruct.messages import (
        AssistantMessage,
        SystemMessage,
        ToolMessage,
        UserMessage,
    )
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.protocol.instruct.tool_calls import Function, FunctionCall, Tool, ToolCall
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    fn = TOOLS[1]["function"]
    request = ChatCompletionRequest(
        messages=[
            SystemMessage(content="Be brief."),
            UserMessage(content="Weather? 你好"),
            AssistantMessage(
                content=None,
                tool_calls=[
                    ToolCall(
                        id="abcDEF123",
                        function=FunctionCall(name="search", arguments='{"query": "x"}'),
                    )
                ],
            ),
            ToolMessage(content='{"temp_c": 21}', tool_call_id="abcDEF123"),
            AssistantMessage(content="Sunny."),
            UserMessage(content="Thanks"),
        ],
        tools=[Tool(function=Function(**fn))],
    )
    expected = MistralTokenizer.v3(is_tekken=True).encode_chat_completion(request).text
    ours = chatfmt.get_template("mistral-v3-tekken").render(
        [m.model_dump(exclude_none=True) for m in request.messages], tools=[TOOLS[1]]
    )
    assert ours == expected
    # Known difference: for a plain-text tool result the official Jinja writes the text
    # unquoted ({"content": sunny, …}) while mistral-common JSON-quotes it; chatfmt follows the Jinja.
