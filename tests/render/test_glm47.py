"""GLM-4.7 / GLM-4.7-Flash: byte-identity with GLM-4.7-Flash.jinja, reasoning options,
tool calls with typed arguments, segments, and parsing round trips (glm45 + think)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_conv_matches_official, null_content_as_absent
from _segments import assert_follow_up_continues
from _streaming import assert_stream_equals_whole
from chatfmt.errors import UnsupportedFeatureError, ValidationError
from chatfmt.parsing import parse
from chatfmt.segments import Kind, Segment

from _support import ROOT, TOOLS, conversations, official_source, texts

FILE = "GLM-4.7-Flash.jinja"
SOURCE = official_source(FILE)

options = st.fixed_dictionaries(
    {}, optional={"enable_thinking": st.booleans(), "clear_thinking": st.booleans()}
)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        texts(),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts(), inner, max_size=3),
    max_leaves=6,
)


def _content_is_the_owners(s: Segment, msgs: list[dict[str, Any]]) -> None:
    if s.kind is Kind.CONTENT and s.message is not None:
        owner = msgs[s.message]
        if owner["role"] != "assistant" and owner.get("content"):
            assert s.text in owner["content"]


def check(conv: dict[str, Any], agp: bool, **opts: Any) -> str | None:
    """chatfmt == official (or both reject: chatfmt with a ChatFmtError). Returns the render."""
    return assert_conv_matches_official(
        "glm4.7",
        SOURCE,
        conv,
        agp,
        options=opts,
        official_messages=null_content_as_absent(conv["messages"]),
        segments=True,
        each_segment=_content_is_the_owners,
    )


def check_follow_up(conv: dict[str, Any], **opts: Any) -> None:
    tpl = chatfmt.get_template("glm4.7")
    msgs = conv["messages"]
    last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=None)
    if last is None or last == len(msgs) - 1:
        return
    # (nothing is checked after an empty reply followed by a system turn: nothing trained)
    assert_follow_up_continues(tpl, msgs, last, tools=conv["tools"], **opts)


# ------------------------------------------------------------------ differential tests
@given(
    conv=conversations(tools=True, reasoning=True, end_with="any", max_turns=4),
    agp=st.booleans(),
    opts=options,
    with_tools=st.booleans(),
)
def test_matches_official(
    conv: dict[str, Any], agp: bool, opts: dict[str, Any], with_tools: bool
) -> None:
    conv = conv if with_tools else {**conv, "tools": None}
    check(conv, agp, **opts)
    check_follow_up(conv, **opts)


@given(conv=conversations(reasoning=True, end_with="any", max_turns=4), agp=st.booleans())
def test_plain_chat_matches_official(conv: dict[str, Any], agp: bool) -> None:
    check(conv, agp)


@given(
    args=st.dictionaries(texts(min_size=1), json_values, max_size=4),
    content=st.one_of(st.none(), texts()),
    opts=options,
)
def test_typed_arguments_match_official(
    args: dict[str, Any], content: str | None, opts: dict[str, Any]
) -> None:
    call = {"id": "c0", "type": "function", "function": {"name": "search", "arguments": args}}
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": content, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "r"},
    ]
    out = check({"messages": msgs, "tools": TOOLS}, True, **opts)
    assert out is not None and "<tool_call>search" in out


# ------------------------------------------------------------------ details
def test_prompt_shapes() -> None:
    tpl = chatfmt.get_template("glm4.7")
    msgs = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Yo", "reasoning_content": " old "},
        {"role": "user", "content": "Again"},
    ]
    assert tpl.render(msgs) == (
        "[gMASK]<sop><|system|>S<|user|>Hi<|assistant|></think>Yo<|user|>Again<|assistant|><think>"
    )
    assert tpl.render(msgs, enable_thinking=False).endswith("<|assistant|></think>")
    kept = tpl.render(msgs, clear_thinking=False, add_generation_prompt=False)
    assert kept == "[gMASK]<sop><|system|>S<|user|>Hi<|assistant|><think>old</think>Yo<|user|>Again"
    segs = tpl.segments(msgs, add_generation_prompt=False)
    trained = [s.text for s in segs if s.trained]
    assert trained == ["Yo", "<|user|>"]  # the reply and the role token that ended it


def test_results_share_one_observation_and_content_none() -> None:
    calls = [
        {"id": f"c{k}", "type": "function", "function": {"name": "search", "arguments": "{}"}}
        for k in range(2)
    ]
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c0", "content": "a"},
        {"role": "tool", "tool_call_id": "c1"},
        {"role": "tool", "tool_call_id": "c1", "content": "b"},
    ]
    out = check({"messages": msgs, "tools": TOOLS}, True)
    assert out is not None
    assert out.endswith(
        "<|observation|><tool_response>a</tool_response><|observation|>"
        "<tool_response>b</tool_response><|assistant|><think>"
    )


def test_code_interpreter_tool_is_listed_like_the_official_template() -> None:
    conv = {"messages": [{"role": "user", "content": "q"}], "tools": [{"type": "code_interpreter"}]}
    out = check(conv, True)
    assert out is not None and '{"type": "code_interpreter"}' in out


def test_errors_name_the_message() -> None:
    tpl = chatfmt.get_template("glm4.7")
    listed = {"type": "function", "function": {"name": "search", "arguments": "[1, 2]"}}
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [listed]}]
    assert check({"messages": msgs, "tools": TOOLS}, True) is None  # both reject
    with pytest.raises(ValidationError) as exc:
        tpl.render(msgs)
    assert exc.value.index == 1
    code = {"type": "code_interpreter", "code_interpreter": {"input": "print(1)"}}
    with pytest.raises(UnsupportedFeatureError) as exc:
        tpl.render([msgs[0], {"role": "assistant", "tool_calls": [code]}])
    assert exc.value.index == 1
    with pytest.raises(chatfmt.errors.TemplateError, match=r"has no option.s. reasoning_effort"):
        tpl.render("q", reasoning_effort="high")


def test_registry_and_config() -> None:
    tpl = chatfmt.get_template("zai-org/GLM-4.7-Flash")
    for name in ("glm4.7", "glm-4.7", "glm4.7-flash", "zai-org/GLM-4.7"):
        assert chatfmt.get_template(name) is tpl
    assert chatfmt.get_template("glm4.5") is not tpl
    assert tpl.tool_parser == "glm45" and tpl.reasoning_parser == "think"
    assert tpl.supports_tools and tpl.supports_reasoning
    assert set(tpl.generation_config.stop_words) == {"<|user|>", "<|observation|>", "<|endoftext|>"}
    assert tpl.official_templates == (FILE,)
    data = ROOT / "src" / "chatfmt" / "data" / "templates" / FILE
    assert data.read_text(encoding="utf-8") == SOURCE
    from chatfmt.jinja import recognize

    assert recognize(SOURCE).template is tpl


# ------------------------------------------------------------------ parsing round trips
plain_texts = texts().filter(lambda t: "<" not in t and "\\" not in t)
#: Without token ids an end-of-turn marker's text ends the turn wherever it is (docs/parsing.md).
_END_MARKERS = ("<|user|>", "<|observation|>", "<|endoftext|>")
non_strings = json_values.filter(
    lambda v: not isinstance(v, str) and not any(w in json.dumps(v) for w in _END_MARKERS)
)


@given(
    args=st.lists(
        st.fixed_dictionaries({"query": plain_texts}, optional={"n": non_strings}), max_size=3
    ),
    reasoning=st.sampled_from(["", "Let me think\nstep by step.", "先想一想 🙂"]),
    content=st.sampled_from(["", "Checking.", "好的"]),
)
def test_round_trip(args: list[dict[str, Any]], reasoning: str, content: str) -> None:
    """Model output after the ``<think>`` prompt parses back into the turn (whole or streamed)."""
    tpl = chatfmt.get_template("glm4.7")
    calls = [
        {"type": "function", "function": {"name": "search", "arguments": json.dumps(a)}}
        for a in args
    ]
    turn: dict[str, Any] = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if calls:
        turn["tool_calls"] = calls
    msgs = [{"role": "user", "content": "q"}, turn]
    segs = tpl.segments(msgs, tools=TOOLS, add_generation_prompt=False)
    text = "".join(s.text for s in segs if s.trained and s.message == 1)
    # After the generation prompt (``<|assistant|><think>``) the model writes the rest.
    output = text.removeprefix("<think>") if reasoning else "</think>" + text
    msg = assert_stream_equals_whole(output, tpl, tools=TOOLS)
    assert (msg.get("reasoning_content") or "") == reasoning
    assert (msg["content"] or "") == content
    got = msg.get("tool_calls", [])
    assert all("error" not in c for c in got)
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in got] == [
        ("search", a) for a in args
    ]


def test_round_trip_typed_values_with_schema() -> None:
    tpl = chatfmt.get_template("glm4.7")
    args = {"location": "上海 🙂", "unit": "celsius"}
    call = {"type": "function", "function": {"name": "get_current_weather", "arguments": args}}
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]}]
    segs = tpl.segments(msgs, tools=TOOLS, add_generation_prompt=False)
    output = "".join(s.text for s in segs if s.trained and s.message == 1)
    msg = parse(output, tpl, tools=TOOLS, enable_thinking=False)
    assert msg["content"] is None
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == args


def test_thinking_prefill_is_derived_from_the_template() -> None:
    tpl = chatfmt.get_template("glm4.7")
    msg = parse("plan</think>Answer.", tpl)
    assert msg == {"role": "assistant", "content": "Answer.", "reasoning_content": "plan"}
    assert parse("Answer.", tpl, enable_thinking=False)["content"] == "Answer."
