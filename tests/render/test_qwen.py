"""Qwen family (qwen, qwen2.5, qwen3, qwq): byte-identity with the official Jinja templates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import chatfmt
from _official import (
    assert_conv_matches_official,
    null_call_content_as_empty,
    ollama_source,
)
from chatfmt import Kind, Template, UnsupportedFeatureError, ValidationError
from chatfmt.errors import TemplateError
from chatfmt.segments import join

from _support import (
    SHARED,
    TOOLS,
    conversations,
    official_render,
    official_source,
    texts,
)

QWEN25_FILE = "Qwen-Qwen2.5-7B-Instruct.jinja"
QWEN3_FILE = "Qwen-Qwen3-0.6B.jinja"
QWQ_FILE = "Qwen-QwQ-32B.jinja"
PKG_TEMPLATES = Path(chatfmt.__file__).parent / "data" / "templates"


def assert_same(
    tpl: Template,
    source: str,
    conv: dict[str, Any],
    agp: bool,
    official_vars: dict[str, Any] | None = None,
    **options: Any,
) -> str | None:
    """chatfmt == official template, or both reject the conversation. Returns the render."""
    return assert_conv_matches_official(
        tpl,
        source,
        conv,
        agp,
        options=options,
        official_vars=official_vars,
        official_fallback=null_call_content_as_empty,
        dropped=dropped(tpl.name, conv["messages"]),
    )


def dropped(name: str, msgs: list[dict[str, Any]]) -> set[tuple[int, str]]:
    """(index, field) of what the official template drops silently and chatfmt refuses.

    QwQ never writes reasoning_content and cuts replies at ``</think>`` except the last
    message: after the last user message (the current turn) both are refused. Qwen2.5 has
    no reasoning format at all.
    """
    if name not in ("qwq", "qwen2.5"):
        return set()
    users = [i for i, m in enumerate(msgs) if m["role"] == "user"]
    start = users[-1] if users and name == "qwq" else -1
    lost = {
        (i, "reasoning_content")
        for i, m in enumerate(msgs)
        if i > start and m.get("reasoning_content")
    }
    for i in range(start + 1, len(msgs) - 1):
        text = msgs[i].get("content") or ""
        cut = text.rsplit("</think>", 1)[0].replace("</think>", "") if "</think>" in text else ""
        if name == "qwq" and msgs[i]["role"] == "assistant" and cut.replace("<think>", "").strip():
            lost.add((i, "content"))
    return lost


def source_texts(conv: dict[str, Any]) -> list[str]:
    out = [json.dumps(t, ensure_ascii=False) for t in conv["tools"] or ()]
    for m in conv["messages"]:
        out += [m.get("content") or "", m.get("reasoning_content") or ""]
        for c in m.get("tool_calls") or ():
            args = c["function"]["arguments"]
            out += [c["function"]["name"], args, json.dumps(json.loads(args), ensure_ascii=False)]
    return out


def assert_segment_invariants(tpl: Template, conv: dict[str, Any], **options: Any) -> None:
    """join == render; content comes from the conversation; only assistant output is trained."""
    msgs, tools = conv["messages"], conv["tools"]
    segs = tpl.segments(msgs, tools=tools, **options)
    assert join(segs) == tpl.render(msgs, tools=tools, **options)
    sources = source_texts(conv)
    for s in segs:
        if s.kind is Kind.CONTENT:
            if s.message is not None:
                assert any(s.text in src for src in sources), s
        else:
            assert not (s.trained and s.text.startswith("<|im_start|>")), s
        if s.trained:
            assert s.message is not None and msgs[s.message]["role"] == "assistant", s
    content = "".join(s.text for s in segs if s.kind is Kind.CONTENT)
    inputs = "".join(sources)
    for token in tpl.control_tokens:
        assert content.count(token) <= inputs.count(token)
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            trained = [s for s in segs if s.message == i and s.trained]
            assert trained and trained[-1].kind is Kind.CONTROL
            assert trained[-1].text.endswith("<|im_end|>")


# --------------------------------------------------------------------------- Qwen2.5
@given(
    conv=conversations(tools=True, max_turns=3, end_with="any"),
    agp=st.booleans(),
    tools=st.booleans(),
)
def test_qwen25_matches_official(conv: dict[str, Any], agp: bool, tools: bool) -> None:
    if not tools:
        conv = {**conv, "tools": None}
    tpl = chatfmt.get_template("qwen2.5")
    if assert_same(tpl, official_source(QWEN25_FILE), conv, agp) is not None:
        assert_segment_invariants(tpl, conv)


@given(conv=conversations(max_turns=3, end_with="any"))
def test_qwen25_no_tools_matches_official(conv: dict[str, Any]) -> None:
    assert_same(chatfmt.get_template("qwen2.5"), official_source(QWEN25_FILE), conv, True)


def test_qwen25_regressions() -> None:
    tpl = chatfmt.get_template("Qwen/Qwen2.5-7B-Instruct")
    assert tpl.name == "qwen2.5"
    assert tpl.render([{"role": "user", "content": "hi"}]) == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
        "<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    msgs = [
        {"role": "user", "content": "天气?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "get_current_weather", "arguments": '{"location":"上海"}'},
                },
                {"type": "function", "function": {"name": "search", "arguments": {"query": "🙂"}}},
            ],
        },
        {"role": "tool", "content": "晴"},
        {"role": "tool", "content": ""},
    ]
    got = tpl.render(msgs, tools=TOOLS)
    assert got.endswith(
        "<|im_start|>assistant\n<tool_call>\n"
        '{"name": "get_current_weather", "arguments": {"location": "上海"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "search", "arguments": {"query": "🙂"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n晴\n</tool_response>\n<tool_response>\n\n"
        "</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    assert got == official_render(official_source(QWEN25_FILE), msgs, tools=TOOLS)
    assert tpl.generation_config.stop_words == ("<|im_end|>", "<|endoftext|>")
    assert tpl.tool_parser == "hermes"


def _lmdeploy() -> dict[str, Any]:
    return json.loads((SHARED / "reference" / "lmdeploy_template_cases.json").read_text())


def test_qwen25_lmdeploy_expected_outputs(shared_dir: Any) -> None:
    tpl = chatfmt.get_template("qwen2.5")
    checked = 0
    for case in _lmdeploy()["expected_output_cases"]:
        if case["template"] != "qwen2d5" or case["method"] != "messages2prompt":
            continue
        msgs = [
            {**m, "content": m["content"] if isinstance(m["content"], str) else str(m["content"])}
            for m in case["messages"]
        ]
        if any(m["role"] == "tool" for m in msgs) and not any(m.get("tool_calls") for m in msgs):
            continue  # tool results without a call: rejected by chatfmt's validation
        tools = [{"type": "function", "function": t} for t in case.get("tools") or ()]
        got = tpl.render(msgs, tools=tools)
        assert got == official_render(official_source(QWEN25_FILE), msgs, tools=tools)
        if any(m.get("tool_calls") for m in msgs):
            # LMDeploy writes "\n" + content even for empty content; the official template does not.
            assert (
                got.replace("assistant\n<tool_call>", "assistant\n\n<tool_call>")
                == case["expected_prompt"]
            )
        else:
            assert got == case["expected_prompt"]
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize(
    ("name", "lmdeploy_name", "keys"),
    [
        (
            "qwen",
            "qwen",
            ("llamacpp_conversation", "no_system_conversation", "get_prompt_first_turn"),
        ),
        (
            "qwen2.5",
            "qwen2d5",
            ("llamacpp_conversation", "no_system_conversation", "get_prompt_first_turn"),
        ),
        ("qwen3", "qwen3", ("llamacpp_conversation",)),
        ("qwq", "qwq", ("llamacpp_conversation",)),
    ],
)
def test_lmdeploy_registry_matrix(
    shared_dir: Any, name: str, lmdeploy_name: str, keys: tuple[str, ...]
) -> None:
    data = _lmdeploy()
    inputs = data["registry_matrix_inputs"]
    row = next(r for r in data["registry_matrix"] if r["template"] == lmdeploy_name)
    tpl = chatfmt.get_template(name)
    for key in keys:
        msgs = (
            inputs[key]
            if key != "get_prompt_first_turn"
            else [{"role": "user", "content": inputs["get_prompt"]}]
        )
        # LMDeploy's QwQ opens <think> like the original Hugging Face template: enable_thinking=True.
        options = {"enable_thinking": True} if name == "qwq" else {}
        assert tpl.render(msgs, **options) == row["renders"][key], key
    later = tpl.render([{"role": "user", "content": inputs["get_prompt"]}], sequence_start=False)
    if name != "qwq":  # LMDeploy's get_prompt does not open <think> for QwQ
        assert later == row["renders"]["get_prompt_later_turn"]


# --------------------------------------------------------------------------- Qwen (1/1.5/2)
@given(conv=conversations(max_turns=4, end_with="any"), agp=st.booleans())
def test_qwen_matches_qwen2_official(conv: dict[str, Any], agp: bool) -> None:
    tpl = chatfmt.get_template("qwen")
    source = ollama_source("library/qwen2:0.5b")
    assert_same(tpl, source, conv, agp)
    assert_segment_invariants(tpl, conv)


def test_qwen_v1_regressions() -> None:
    tpl = chatfmt.get_template("Qwen/Qwen-7B-Chat")
    assert tpl.name == "qwen"
    assert tpl.render("hello, can u introduce yourself") == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nhello, can u introduce yourself<|im_end|>\n<|im_start|>assistant\n"
    )
    assert chatfmt.get_template("Qwen/Qwen2-7B-Instruct").name == "qwen"
    assert "<|im_end|>" in tpl.generation_config.stop_words


# --------------------------------------------------------------------------- Qwen3
@st.composite
def qwen3_conversations(draw: st.DrawFn) -> dict[str, Any]:
    conv = draw(
        conversations(tools=draw(st.booleans()), reasoning=True, max_turns=3, end_with="any")
    )
    msgs = conv["messages"]
    for m in msgs:
        if m["role"] == "assistant" and m.get("content") is None and draw(st.booleans()):
            m["content"] = ""  # the official template needs a string; sometimes keep None
        if m["role"] == "assistant" and draw(st.integers(0, 4)) == 0:
            m["content"] = (
                f"<think>{draw(texts())}</think>{draw(texts())}"  # reasoning inside content
            )
        if m["role"] == "user" and draw(st.integers(0, 5)) == 0:
            m["content"] = f"<tool_response>{draw(texts())}</tool_response>"  # multi-step tool turn
    return conv


@given(conv=qwen3_conversations(), agp=st.booleans(), thinking=st.sampled_from([None, True, False]))
def test_qwen3_matches_official(conv: dict[str, Any], agp: bool, thinking: bool | None) -> None:
    options = {} if thinking is None else {"enable_thinking": thinking}
    tpl = chatfmt.get_template("qwen3")
    for source in (official_source(QWEN3_FILE), _tokenizer_template()):
        if assert_same(tpl, source, conv, agp, **options) is not None:
            assert_segment_invariants(tpl, conv, **options)


def test_qwen3_newline_reply_with_reasoning_before_a_call() -> None:
    """Found by the property above: the official template prints the content stripped of its
    leading newlines but tests the unstripped one before the first call."""
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "get_current_weather", "arguments": '{"location": "hello"}'},
    }
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "\n", "tool_calls": [call], "reasoning_content": " "},
    ]
    conv = {"messages": msgs, "tools": None}
    assert_same(chatfmt.get_template("qwen3"), official_source(QWEN3_FILE), conv, False)


def _tokenizer_template() -> str:
    cfg = json.loads((SHARED / "tokenizers" / "qwen3" / "tokenizer_config.json").read_text())
    return str(cfg["chat_template"])


def test_qwen3_history_thinking_rules() -> None:
    tpl = chatfmt.get_template("Qwen/Qwen3-8B")
    msgs = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1", "reasoning_content": "dropped"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "\n\n<think>\nparsed\n</think>\n\na2"},
        {"role": "user", "content": "<tool_response>\nx\n</tool_response>"},
        {"role": "assistant", "content": "a3", "reasoning_content": "kept"},
    ]
    got = tpl.render(msgs, add_generation_prompt=False)
    assert "dropped" not in got
    assert "<|im_start|>assistant\n<think>\nparsed\n</think>\n\na2<|im_end|>" in got
    assert got.endswith("<|im_start|>assistant\n<think>\nkept\n</think>\n\na3<|im_end|>\n")
    assert got == official_render(official_source(QWEN3_FILE), msgs, add_generation_prompt=False)
    assert tpl.render([{"role": "user", "content": "hi"}], enable_thinking=False).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert tpl.render([{"role": "user", "content": "hi"}]).endswith("<|im_start|>assistant\n")
    gen = tpl.generation_config
    assert (gen.temperature, gen.top_p, gen.top_k) == (0.6, 0.95, 20)
    assert tpl.reasoning_parser == "qwen3" and tpl.tool_parser == "hermes"


def test_qwen3_errors_name_the_message() -> None:
    tpl = chatfmt.get_template("qwen3")
    call = {"type": "function", "function": {"name": "search", "arguments": "{}"}}
    null_call = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    empty_call = [null_call[0], {**null_call[1], "content": ""}]
    assert tpl.render(null_call) == tpl.render(empty_call)  # documented workaround
    with pytest.raises(ValidationError) as err:
        tpl.render([{"role": "user", "content": None}])
    assert err.value.index == 0 and err.value.field == "content"
    with pytest.raises(ValidationError, match="needs at least one message") as empty:
        tpl.render([])
    assert (empty.value.index, empty.value.field) == (None, "messages")
    code = {"type": "code_interpreter", "code_interpreter": {"input": "1+1"}}
    with pytest.raises(UnsupportedFeatureError) as err2:
        tpl.render(
            [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": "", "tool_calls": [code]},
            ]
        )
    assert err2.value.index == 1
    with pytest.raises(TemplateError, match=r"has no option.s. reasoning_mode"):
        tpl.render("hi", reasoning_mode="x")


def test_qwen3_arguments_string_printed_verbatim() -> None:
    tpl = chatfmt.get_template("qwen3")
    call = {"type": "function", "function": {"name": "search", "arguments": '{"query":"a"}'}}
    got = tpl.render(
        [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
    )
    assert '{"name": "search", "arguments": {"query":"a"}}' in got
    # Qwen2.5 always applies tojson to the parsed arguments.
    got25 = chatfmt.get_template("qwen2.5").render(
        [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
    )
    assert '{"name": "search", "arguments": {"query": "a"}}' in got25


# --------------------------------------------------------------------------- QwQ
@given(
    conv=conversations(tools=True, max_turns=3, end_with="any"),
    agp=st.booleans(),
    thinking=st.booleans(),
)
def test_qwq_matches_official(conv: dict[str, Any], agp: bool, thinking: bool) -> None:
    tpl = chatfmt.get_template("qwq")
    if assert_same(tpl, official_source(QWQ_FILE), conv, agp, enable_thinking=thinking) is not None:
        assert_segment_invariants(tpl, conv, enable_thinking=thinking)


def test_qwq_generation_prompt_and_history() -> None:
    tpl = chatfmt.get_template("Qwen/QwQ-32B")
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "<think>\nr\n</think>\n\nanswer"},
        {"role": "user", "content": "q2"},
    ]
    got = tpl.render(msgs, enable_thinking=True)
    assert "<|im_start|>assistant\nanswer<|im_end|>" in got
    assert got.endswith("<|im_start|>assistant\n<think>\n")
    assert got == official_render(official_source(QWQ_FILE), msgs, enable_thinking=True)
    # The default is the reference file with the variable undefined: the block is closed.
    default = tpl.render(msgs)
    assert default.endswith("<|im_start|>assistant\n<think>\n</think>")
    assert default == official_render(official_source(QWQ_FILE), msgs)


# --------------------------------------------------------------------------- follow-up turns
@given(
    a=conversations(tools=True, max_turns=2, end_with="assistant"),
    b=conversations(system=False, max_turns=2, end_with="any"),
    name=st.sampled_from(["qwen", "qwen2.5", "qwq", "qwen3"]),
)
def test_sequence_start_false(a: dict[str, Any], b: dict[str, Any], name: str) -> None:
    tpl = chatfmt.get_template(name)
    tools = a["tools"] if name != "qwen" else None
    msgs_a = (
        a["messages"]
        if name != "qwen"
        else [m for m in a["messages"] if not m.get("tool_calls") and m["role"] != "tool"]
    )
    if name in ("qwen3", "qwq"):
        for m in msgs_a:
            if m["role"] == "assistant" and m.get("content") is None:
                m["content"] = ""
    full = tpl.render(msgs_a + b["messages"], tools=tools)
    follow = tpl.render(b["messages"], tools=tools, sequence_start=False)
    if name == "qwen3":
        # History thinking is dropped once a new query follows, so only the tail is stable.
        assert full.endswith(follow)
        return
    if name == "qwq":
        # History replies lose everything up to </think> and leading newlines.
        texts_a = [m.get("content") or "" for m in msgs_a if m["role"] == "assistant"]
        assume(all(t.split("</think>")[-1].lstrip("\n") == t for t in texts_a))
    assert full == held_prefix(tpl, msgs_a, tools) + follow


def held_prefix(tpl: Template, msgs: list[dict[str, Any]], tools: Any) -> str:
    """What the engine holds after the last reply: the render up to its trained end marker."""
    segs = tpl.segments(msgs, tools=tools, add_generation_prompt=False)
    last = max(i for i, s in enumerate(segs) if s.trained)
    return join(segs[: last + 1])


def test_data_files_are_the_official_templates(shared_dir: Any) -> None:
    for name in ("qwen2.5", "qwen3", "qwq"):
        for f in chatfmt.get_template(name).official_templates:
            assert (PKG_TEMPLATES / f).read_text(encoding="utf-8") == official_source(f)
    (qwen2,) = chatfmt.get_template("qwen").official_templates
    assert (PKG_TEMPLATES / qwen2).read_text(encoding="utf-8") == ollama_source(
        "library/qwen2:0.5b"
    )
