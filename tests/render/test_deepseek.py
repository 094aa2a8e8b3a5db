"""DeepSeek Coder / V2 / V3 / V3.1 / R1 distills: byte-identity with the official templates, segments."""

from __future__ import annotations

import copy
import json
from importlib.resources import files
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_matches_official
from _segments import assert_follow_up_continues, assert_segments_consistent
from chatfmt.errors import UnsupportedFeatureError, ValidationError
from chatfmt.segments import Kind

from _support import SHARED, TOOLS, conversations, official_render, official_source, texts

pytestmark = pytest.mark.usefixtures("shared_dir")

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
VARS = {"bos_token": BOS, "eos_token": EOS}
CODER_VARS = {"bos_token": BOS, "eos_token": "<|EOT|>"}

#: name -> (official file, template variables, tool-call arguments as the template expects them)
CASES: dict[str, tuple[str, dict[str, str], str]] = {
    "deepseek-coder": ("deepseek-ai-deepseek-coder-33b-instruct.jinja", CODER_VARS, "object"),
    "deepseek-v2": ("deepseek-ai-DeepSeek-V2-Chat.jinja", VARS, "object"),
    "deepseek-v3": ("deepseek-ai-DeepSeek-V3.jinja", VARS, "string"),
    "deepseek-v3.1": ("deepseek-ai-DeepSeek-V3.1.jinja", VARS, "object"),
    "deepseek-r1-distill-llama": ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", VARS, "string"),
    "deepseek-r1-distill-qwen": ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", VARS, "object"),
}
TOOL_TEMPLATES = [
    "deepseek-v3",
    "deepseek-v3.1",
    "deepseek-r1-distill-llama",
    "deepseek-r1-distill-qwen",
]


def data_source(filename: str) -> str:
    return (files("chatfmt") / "data" / "templates" / filename).read_text(encoding="utf-8")


def oracle(name: str, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    """The official rendering; V3 and the Llama distill concatenate arguments, so they get the JSON string."""
    filename, tvars, args = CASES[name]
    source = data_source(filename)
    if args == "object":
        return official_render(source, messages, **tvars, **kwargs)
    from transformers.utils.chat_template_utils import render_jinja_template

    out = render_jinja_template(
        conversations=[copy.deepcopy(messages)], chat_template=source, **tvars, **kwargs
    )
    out = out[0] if isinstance(out, tuple) else out
    return out[0] if isinstance(out, list) else out


#: Templates without a reasoning format.
NO_REASONING = ("deepseek-coder", "deepseek-v2", "deepseek-v3")
#: Templates whose official version writes tool calls only for content null.
NULL_CONTENT_CALLS = ("deepseek-v3", "deepseek-r1-distill-llama")


def dropped(name: str, messages: list[dict[str, Any]]) -> set[tuple[int, str]]:
    """(index, field) of what the official template would drop silently; chatfmt raises there."""
    out: set[tuple[int, str]] = set()
    if name in NULL_CONTENT_CALLS:
        out |= {
            (i, "tool_calls")
            for i, m in enumerate(messages)
            if m["role"] == "assistant" and m.get("tool_calls") and m.get("content")
        }
    if name.startswith("deepseek-r1"):  # only the last system message is written
        systems = [i for i, m in enumerate(messages) if m["role"] == "system"]
        out |= {(i, "role") for i in systems[:-1]}
    # reasoning_content is never written: refused everywhere by the formats without
    # reasoning, and after the last user message (the current turn) by the others.
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    start = -1 if name in NO_REASONING else (users[-1] if users else -1)
    out |= {
        (i, "reasoning_content")
        for i, m in enumerate(messages)
        if i > start and m.get("reasoning_content")
    }
    if name not in NO_REASONING:  # replies of the current turn cut at </think>
        out |= {
            (i, "content") for i in range(start + 1, len(messages)) if think_cut(name, messages, i)
        }
    return out


def think_cut(name: str, messages: list[dict[str, Any]], i: int) -> bool:
    """Whether the official template cuts reasoning text off reply ``i`` at ``</think>``."""
    m = messages[i]
    text = m.get("content") or ""
    if m["role"] != "assistant" or "</think>" not in text:
        return False
    if m.get("tool_calls") and name != "deepseek-r1-distill-qwen":
        return False  # written as is (or refused as text beside calls)
    before = [p["role"] for p in messages[:i] if p["role"] != "system"]
    if not m.get("tool_calls") and before and before[-1] == "tool":
        return False  # a reply right after tool outputs is not cut
    cut = text.split("</think>", 1)[0] if name == "deepseek-v3.1" else text.rsplit("</think>", 1)[0]
    return bool(cut.replace("<think>", "").replace("</think>", "").strip())


def normalized(name: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documented workaround: content "" with tool calls renders as content null."""
    if name not in NULL_CONTENT_CALLS:
        return messages
    return [
        {**m, "content": None}
        if m["role"] == "assistant" and m.get("tool_calls") and m.get("content") == ""
        else m
        for m in messages
    ]


def check_same(
    name: str,
    messages: list[dict[str, Any]],
    *,
    tools: Any = None,
    agp: bool = True,
    **options: Any,
) -> str | None:
    """chatfmt == official (of the normalized conversation); a chatfmt error where it raises
    or where it would drop data silently."""
    return assert_matches_official(
        name,
        data_source(CASES[name][0]),
        messages,
        tools=tools,
        add_generation_prompt=agp,
        options=options,
        official_messages=normalized(name, messages),
        dropped=dropped(name, messages),
        oracle=lambda _source, msgs, **kw: oracle(name, msgs, **kw),
    )


def test_shipped_files_are_the_official_ones() -> None:
    for name in (
        "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "deepseek-ai-DeepSeek-V3.1.jinja",
    ):
        assert data_source(name) == official_source(name)
    cfg = json.loads(
        (SHARED / "tokenizers" / "deepseek_v3" / "tokenizer_config.json").read_text(
            encoding="utf-8"
        )
    )
    assert data_source("deepseek-ai-DeepSeek-V3.jinja") == cfg["chat_template"]
    cases = json.loads(
        (SHARED / "reference" / "llamacpp_chat_template_cases.json").read_text(encoding="utf-8")
    )
    by_name = {c["name"]: c for c in cases["cases"]}
    assert (
        data_source(CASES["deepseek-coder"][0])
        == by_name["deepseek-ai/deepseek-coder-33b-instruct"]["template_source"]
    )
    assert data_source(CASES["deepseek-v2"][0]) == by_name["DeepSeek-V2"]["template_source"]


def test_llamacpp_expected_outputs() -> None:
    cases = json.loads(
        (SHARED / "reference" / "llamacpp_chat_template_cases.json").read_text(encoding="utf-8")
    )
    conv = cases["conversation"]
    by_name = {c["name"]: c for c in cases["cases"]}
    coder = by_name["deepseek-ai/deepseek-coder-33b-instruct"]["expected_output_jinja"]
    assert chatfmt.get_template("deepseek-coder").render(conv) == BOS + coder
    v2 = by_name["DeepSeek-V2"]["expected_output_jinja"]
    assert chatfmt.get_template("deepseek-v2").render(conv) == BOS + v2


# ----------------------------------------------------------------------------- strategies
@st.composite
def with_think(draw: st.DrawFn, conv: dict[str, Any]) -> dict[str, Any]:
    """Put '<think>…</think>' into some assistant answers (history stripping)."""
    conv = copy.deepcopy(conv)
    for m in conv["messages"]:
        if m["role"] == "assistant" and isinstance(m.get("content"), str) and draw(st.booleans()):
            m["content"] = f"<think>{draw(texts())}</think>" + m["content"]
    return conv


@st.composite
def deepseek_conversations(draw: st.DrawFn, tools: bool) -> dict[str, Any]:
    conv = draw(conversations(tools=tools, reasoning=True, end_with="any", max_turns=3))
    conv = draw(with_think(conv))
    msgs = conv["messages"]
    if draw(st.integers(0, 4)) == 0:  # a second (later) system message
        msgs.insert(draw(st.integers(0, len(msgs))), {"role": "system", "content": draw(texts())})
    return conv


# ----------------------------------------------------------------------------- differential
@pytest.mark.parametrize("name", ["deepseek-coder", "deepseek-v2"])
@given(conv=deepseek_conversations(tools=False), agp=st.booleans())
def test_plain_templates_match_official(name: str, conv: dict[str, Any], agp: bool) -> None:
    check_same(name, conv["messages"], agp=agp)


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
@given(conv=deepseek_conversations(tools=True), agp=st.booleans())
def test_tool_templates_match_official(name: str, conv: dict[str, Any], agp: bool) -> None:
    check_same(name, conv["messages"], tools=conv["tools"], agp=agp)


@given(
    conv=deepseek_conversations(tools=True),
    agp=st.booleans(),
    opts=st.sampled_from(
        [
            {},
            {"thinking": True},
            {"thinking": False},
            {"enable_thinking": True},
            {"thinking": False, "enable_thinking": True},
        ]
    ),
)
def test_v31_thinking_matches_official(
    conv: dict[str, Any], agp: bool, opts: dict[str, Any]
) -> None:
    check_same("deepseek-v3.1", conv["messages"], tools=conv["tools"], agp=agp, **opts)


@given(conv=deepseek_conversations(tools=False), enable=st.booleans())
def test_r1_qwen_enable_thinking_matches_official(conv: dict[str, Any], enable: bool) -> None:
    check_same("deepseek-r1-distill-qwen", conv["messages"], enable_thinking=enable)


# ----------------------------------------------------------------------------- known strings
def test_v3_tool_round_trip_string() -> None:
    msgs = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "type": "function",
                    "function": {
                        "name": "get_current_weather",
                        "arguments": '{"location": "Paris"}',
                    },
                },
                {"type": "function", "function": {"name": "search", "arguments": '{"query": "x"}'}},
            ],
        },
        {"role": "tool", "content": "sunny"},
        {"role": "tool", "content": "found"},
        {"role": "assistant", "content": "It is sunny."},
    ]
    out = chatfmt.get_template("deepseek-ai/DeepSeek-V3").render(msgs, add_generation_prompt=False)
    assert out == (
        f"{BOS}S<｜User｜>Weather?<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
        'get_current_weather\n```json\n{"location": "Paris"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function'
        '<｜tool▁sep｜>search\n```json\n{"query": "x"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'
        "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>sunny<｜tool▁output▁end｜>\n<｜tool▁output▁begin｜>found"
        f"<｜tool▁output▁end｜><｜tool▁outputs▁end｜>It is sunny.{EOS}"
    )
    assert out == oracle("deepseek-v3", msgs, add_generation_prompt=False)


def test_v31_tool_call_and_thinking_prompt() -> None:
    tpl = chatfmt.get_template("deepseek-ai/DeepSeek-V3.1")
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "search", "arguments": {"query": "天气"}}}
            ],
        },
        {"role": "tool", "content": "r"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "again"},
    ]
    out = tpl.render(msgs, thinking=True)
    assert out == (
        f"{BOS}<｜User｜>q<｜Assistant｜><think></think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>"
        '{"query": "天气"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜><｜tool▁output▁begin｜>r'
        f"<｜tool▁output▁end｜>a{EOS}<｜User｜>again<｜Assistant｜><think>"
    )
    assert tpl.render(msgs).endswith("<｜Assistant｜><think></think>")
    assert tpl.tool_parser == "deepseek_v31" and tpl.reasoning_parser == "think"


def test_r1_distill_strips_think_history_and_opens_think() -> None:
    tpl = chatfmt.get_template("deepseek-ai/DeepSeek-R1-Distill-Llama-8B")
    msgs = [
        {"role": "user", "content": "1+1?"},
        {
            "role": "assistant",
            "content": "<think>easy</think>\n\n2",
            "reasoning_content": "ignored",
        },
        {"role": "user", "content": "2+2?"},
    ]
    assert (
        tpl.render(msgs)
        == f"{BOS}<｜User｜>1+1?<｜Assistant｜>\n\n2{EOS}<｜User｜>2+2?<｜Assistant｜><think>\n"
    )
    qwen = chatfmt.get_template("DeepSeek-R1-Distill-Qwen-7B")
    assert qwen.render(msgs).endswith("<｜Assistant｜><think>\n</think>")
    assert qwen.render(msgs, enable_thinking=True).endswith("<｜Assistant｜><think>\n")


CALL = {
    "id": "abcdefghi",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def _call_turn(content: str | None) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": content, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "sunny"},
    ]


@pytest.mark.parametrize("name", NULL_CONTENT_CALLS)
def test_tool_calls_with_text_raise_instead_of_vanishing(name: str) -> None:
    tpl = chatfmt.get_template(name)
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(_call_turn("Let me check."), tools=TOOLS, strict_history=True)
    assert (err.value.index, err.value.field) == (1, "tool_calls")
    assert "drop" in str(err.value)
    # The same in a follow-up fragment: the index is the fragment's own.
    with pytest.raises(UnsupportedFeatureError) as follow:
        tpl.render(_call_turn("Let me check.")[1:], sequence_start=False, strict_history=True)
    assert (follow.value.index, follow.value.field) == (0, "tool_calls")


@pytest.mark.parametrize("name", NULL_CONTENT_CALLS)
@pytest.mark.parametrize("agp", [False, True])
def test_empty_content_with_tool_calls_renders_like_null(name: str, agp: bool) -> None:
    tpl = chatfmt.get_template(name)
    got = tpl.render(_call_turn(""), tools=TOOLS, add_generation_prompt=agp)
    assert got == tpl.render(_call_turn(None), tools=TOOLS, add_generation_prompt=agp)
    assert got == oracle(name, _call_turn(None), add_generation_prompt=agp)
    assert 'get_weather\n```json\n{"city": "Paris"}\n```' in got
    # The official render of the raw conversation loses the call: that is what chatfmt avoids.
    assert "get_weather" not in oracle(name, _call_turn(""), add_generation_prompt=agp)


def test_r1_qwen_keeps_text_and_calls() -> None:
    """R1-Distill-Qwen writes calls whenever there are any, then the text: nothing is lost."""
    msgs = _call_turn("Let me check.")
    got = chatfmt.get_template("deepseek-r1-distill-qwen").render(msgs)
    assert got == oracle("deepseek-r1-distill-qwen", msgs, add_generation_prompt=True)
    assert "get_weather" in got and "Let me check." in got


@pytest.mark.parametrize("name", ["deepseek-r1-distill-llama", "deepseek-r1-distill-qwen"])
def test_r1_more_than_one_system_message_raises(name: str) -> None:
    tpl = chatfmt.get_template(name)
    msgs = [
        {"role": "system", "content": "FIRST"},
        {"role": "user", "content": "q"},
        {"role": "system", "content": "SECOND"},
        {"role": "user", "content": "q2"},
    ]
    assert "FIRST" not in oracle(name, msgs, add_generation_prompt=True)
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(msgs)
    assert (err.value.index, err.value.field) == (0, "role")
    one = msgs[1:]  # a single system message, wherever it is, is written first
    assert tpl.render(one) == oracle(name, one, add_generation_prompt=True)
    assert tpl.render(one).startswith(BOS + "SECOND<｜User｜>q")
    # V3 and V3.1 join all system messages: nothing to refuse.
    for keeps_all in ("deepseek-v3", "deepseek-v3.1"):
        out = chatfmt.get_template(keeps_all).render(msgs)
        assert out == oracle(keeps_all, msgs, add_generation_prompt=True)
        assert "FIRST\n\nSECOND" in out


def test_errors_and_lookup() -> None:
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.get_template("deepseek-v2").render(
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
            ]
        )
    assert err.value.index == 1
    with pytest.raises(ValidationError) as verr:
        chatfmt.get_template("deepseek-v3.1").render(
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": None}]
        )
    assert verr.value.index == 1
    assert chatfmt.get_template("deepseek-ai/deepseek-coder-6.7b-instruct").name == "deepseek-coder"
    assert chatfmt.get_template("deepseek-ai/DeepSeek-V2-Chat").name == "deepseek-v2"
    assert chatfmt.get_template("deepseek-ai/DeepSeek-V2.5").name == "deepseek-v3"
    assert chatfmt.get_template("DeepSeek-V3.1-Base").name == "deepseek-v3.1"
    assert chatfmt.get_template("DeepSeek-R1-Distill-Qwen-14B").name == "deepseek-r1-distill-qwen"
    assert EOS in chatfmt.get_template("deepseek-v3").generation_config.stop_words


# ----------------------------------------------------------------------------- properties
ALL = list(CASES)


@pytest.mark.parametrize("name", ALL)
@given(conv=conversations(end_with="any", max_turns=3), agp=st.booleans())
def test_segments_invariants(name: str, conv: dict[str, Any], agp: bool) -> None:
    tpl = chatfmt.get_template(name)
    msgs = conv["messages"]
    lost = dropped(name, msgs)
    if lost:
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.segments(msgs, add_generation_prompt=agp)
        assert (err.value.index, err.value.field) in lost
        return
    assert_segments_consistent(
        tpl, msgs, content_roles=("user", "system"), add_generation_prompt=agp
    )


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
def test_tool_call_text_is_trained_content(name: str) -> None:
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query": "<｜User｜>"}'},
                }
            ],
        },
    ]
    segs = chatfmt.get_template(name).segments(msgs, tools=TOOLS, add_generation_prompt=False)
    content = [s for s in segs if s.kind is Kind.CONTENT and s.message == 1]
    assert content and all(s.trained for s in content)
    assert any("<｜User｜>" in s.text for s in content)


@pytest.mark.parametrize("name", ALL)
@given(history=conversations(end_with="assistant", max_turns=2), new=texts())
def test_sequence_start_false_continues_the_full_render(
    name: str, history: dict[str, Any], new: str
) -> None:
    tpl = chatfmt.get_template(name)
    msgs = history["messages"]
    new_msgs = [{"role": "user", "content": new}]
    assert assert_follow_up_continues(tpl, msgs + new_msgs, len(msgs) - 1)
