"""Render options every template shares: ``continue_final_message``, ``sequence_start=False``,
completion templates and ``now``."""

from __future__ import annotations

import datetime as dt

import pytest

import chatfmt
from chatfmt import UnsupportedFeatureError, ValidationError
from chatfmt.jinja import JinjaTemplate
from chatfmt.segments import Kind, Segment, truncate_after_content
from chatfmt.template import RenderContext, parse_now

USER_HI = {"role": "user", "content": "hi"}

SIMPLE_JINJA = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

#: A Jinja template that moves the system text to the start of the sequence (like DeepSeek V3).
SYSTEM_FIRST_JINJA = (
    "{% set ns = namespace(sys='') %}{% for m in messages %}{% if m.role == 'system' %}"
    "{% set ns.sys = m.content %}{% endif %}{% endfor %}<s>{{ ns.sys }}"
    "{% for m in messages %}{% if m.role == 'user' %}<U>{{ m.content }}"
    "{% elif m.role == 'assistant' %}<A>{{ m.content }}</s>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<A>{% endif %}"
)


# ------------------------------------------------------------------ continue_final_message
@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("qwen2.5", "<|im_start|>assistant\n"),
        ("llama3", "<|start_header_id|>assistant<|end_header_id|>\n\n"),
        ("gemma3", "<start_of_turn>model\n"),
        ("phi3", "<|assistant|>\n"),
        ("mistral-v7", "[INST]hi[/INST]"),
    ],
)
def test_continue_empty_final_message_ends_at_open_header(name: str, header: str) -> None:
    msgs = [USER_HI, {"role": "assistant", "content": ""}]
    text = chatfmt.render(msgs, name, continue_final_message=True)
    assert text.endswith(header)
    assert not text.endswith(chatfmt.render(msgs, name, add_generation_prompt=False)[-3:])


def test_continue_null_final_message() -> None:
    msgs = [USER_HI, {"role": "assistant", "content": None}]
    text = chatfmt.render(msgs, "llama3", continue_final_message=True)
    assert text == chatfmt.render([USER_HI], "llama3")


def test_continue_empty_final_message_jinja() -> None:
    t = JinjaTemplate(SIMPLE_JINJA)
    text = t.render([USER_HI, {"role": "assistant", "content": ""}], continue_final_message=True)
    assert text == "<|user|>hi<|end|><|assistant|>"


def test_truncate_after_content_rules() -> None:
    segs = [
        Segment("<u>", Kind.CONTROL, 0),
        Segment("hi", Kind.CONTENT, 0),
        Segment("<a>", Kind.CONTROL, 1),
        Segment("</s>", Kind.CONTROL, 1, trained=True),
        Segment("\n", Kind.CONTROL, 1),
    ]
    assert "".join(s.text for s in truncate_after_content(segs, 1)) == "<u>hi<a>"
    assert "".join(s.text for s in truncate_after_content(segs, 0)) == "<u>hi"


@pytest.mark.parametrize("source", ["qwen2.5", "jinja"])
def test_continue_final_message_with_tool_calls_is_rejected(source: str) -> None:
    msgs = [
        USER_HI,
        {
            "role": "assistant",
            "content": "x",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
        },
    ]
    tpl = chatfmt.get_template("qwen2.5") if source == "qwen2.5" else JinjaTemplate(SIMPLE_JINJA)
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(msgs, continue_final_message=True)
    assert (err.value.index, err.value.field) == (1, "tool_calls")


# ------------------------------------------------------------------ sequence_start=False
@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-r1-distill-qwen"])
def test_follow_up_system_at_sequence_start_raises(name: str) -> None:
    msgs = [{"role": "system", "content": "SYSMARK"}, {"role": "user", "content": "hello"}]
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(msgs, name, sequence_start=False)
    assert (err.value.index, err.value.field) == (0, "role")


def test_follow_up_system_turn_still_renders_where_it_is_a_turn() -> None:
    msgs = [{"role": "system", "content": "SYSMARK"}, {"role": "user", "content": "hello"}]
    assert "SYSMARK" in chatfmt.render(msgs, "qwen2.5", sequence_start=False)


def test_follow_up_system_at_sequence_start_raises_for_jinja() -> None:
    t = JinjaTemplate(SYSTEM_FIRST_JINJA)
    msgs = [{"role": "system", "content": "SYSMARK"}, {"role": "user", "content": "hello"}]
    with pytest.raises(UnsupportedFeatureError) as err:
        t.render(msgs, sequence_start=False)
    assert err.value.index == 0
    assert t.render([{"role": "user", "content": "hello"}], sequence_start=False) == "<U>hello<A>"


# ------------------------------------------------------------------ completion templates
def test_completion_template_accepts_one_prompt_only() -> None:
    assert chatfmt.render("Once upon", "internlm-7b") == "Once upon"
    assert chatfmt.render([{"role": "user", "content": "Once"}], "internlm-7b") == "Once"
    two = [{"role": "system", "content": "You are X."}, {"role": "user", "content": "Hello"}]
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(two, "internlm-7b")
    assert err.value.index == 1
    tool = {"type": "function", "function": {"name": "f"}}
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render("x", "internlm-7b", tools=[tool])
    assert err.value.field == "tools"
    call = {"type": "function", "function": {"name": "f", "arguments": {}}}
    with pytest.raises(UnsupportedFeatureError, match=r"completion .* has no tool calls") as err:
        chatfmt.render(
            [{"role": "assistant", "content": None, "tool_calls": [call]}], "internlm-7b"
        )
    assert (err.value.index, err.value.field) == (0, "tool_calls")


# ------------------------------------------------------------------ now
def test_now_parser() -> None:
    assert parse_now("2025-03-07") == dt.datetime(2025, 3, 7)
    assert parse_now("2025-03-07T10:30:00") == dt.datetime(2025, 3, 7, 10, 30)
    assert parse_now(dt.date(2025, 3, 7)) == dt.datetime(2025, 3, 7)
    assert parse_now(None) is None
    for bad in ("2025-03-07 NOT A DATE", "07 Mar 2025", 20250307):
        with pytest.raises(ValidationError) as err:
            parse_now(bad)  # type: ignore[arg-type]
        assert err.value.field == "now"
    assert RenderContext(now="2025-03-07T23:59:00").now == dt.date(2025, 3, 7)


def test_now_same_for_native_and_jinja() -> None:
    with pytest.raises(ValidationError, match="must be an ISO date") as err:
        chatfmt.render([USER_HI], "llama3.2", now="2025-03-07 NOT A DATE")
    assert err.value.field == "now"
    assert "07 Mar 2025" in chatfmt.render([USER_HI], "llama3.2", now="2025-03-07T08:00:00")
    t = JinjaTemplate("{{ strftime_now('%d %b %Y %H:%M') }}")
    assert t.render([USER_HI], now="2025-03-07T08:15:00") == "07 Mar 2025 08:15"
    assert t.render([USER_HI], now=dt.date(2025, 3, 7)) == "07 Mar 2025 00:00"
    with pytest.raises(ValidationError, match="must be an ISO date") as err:
        t.render([USER_HI], now="2025-03-07 NOT A DATE")
    assert err.value.field == "now"
