"""Round trip: ``parse(render(assistant turn))`` gives the turn back, for every registered
template with a tool parser (the trained segments of the last message are what the
model generated; the end-of-turn stop word is cut, as engines do)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chatfmt
from _streaming import assert_stream_equals_whole
from _tool_roundtrip import continuation
from chatfmt.errors import ChatFmtError
from chatfmt.jinja.packaged import PackagedTemplate
from chatfmt.jinja.template import JinjaTemplate

from _support import TOOLS, texts, tool_call_lists

#: Native templates with a tool parser. Packaged official Jinja templates get the round trip
#: from the render diff in tests/parse/test_render_parse_loop.py: their trained segments come from the Jinja
#: backend's sentinel tracing, which cuts tool-call turns short (Cohere2MoE, Hy3, Apriel 1.6).
TOOL_TEMPLATES = sorted(
    t.name
    for t in chatfmt.list_templates()
    if t.tool_parser and not isinstance(t, PackagedTemplate)
)
#: Templates that write the text of a tool-call message as its reasoning (Harmony's analysis).
TEXT_WITH_CALLS_AS_REASONING = frozenset({"gpt-oss"})


def generated_text(tpl: Any, messages: list[dict[str, Any]]) -> str:
    """The assistant turn as the model generated it: trained segments up to the first stop word.

    (A few official templates write the content after a stop word, e.g. DeepSeek-R1
    distills; a model stops there, so that content is not part of the output.) A Jinja
    template (packaged) has no native segments: its turn is what the render adds to the
    generation prompt (see ``_tool_roundtrip.continuation``), which may continue a
    prefilled ``<think>``.
    """
    stops = [w for w in tpl.generation_config.stop_words or () if w]
    if isinstance(tpl, JinjaTemplate):
        prompt = tpl.render(messages[:-1], tools=TOOLS, add_generation_prompt=True)
        out = continuation(prompt, tpl.render(messages, tools=TOOLS, add_generation_prompt=False))
        return _before_final_stop(out, stops)
    segs = tpl.segments(
        messages, tools=TOOLS, add_generation_prompt=False, continue_final_message=False
    )
    last = len(messages) - 1
    parts = []
    for seg in segs:
        if not (seg.trained and seg.message == last):
            continue
        if seg.is_control:
            hits = [seg.text.find(w) for w in stops if w in seg.text]
            if hits:
                parts.append(seg.text[: min(hits)])
                break
        parts.append(seg.text)
    return "".join(parts)


def _before_final_stop(out: str, stops: list[str]) -> str:
    """``out`` up to the stop words that end it (a stop word quoted earlier stays in)."""
    for at in sorted({i for w in stops for i in range(len(out)) if out.startswith(w, i)}):
        rest = out[at:]
        for w in stops:
            rest = rest.replace(w, "")
        if not rest.strip():
            return out[:at]
    return out


def prefill(tpl: Any) -> dict[str, Any]:
    """Native turns hold their own ``<think>``; a Jinja turn continues the prompt's (detected)."""
    return {} if isinstance(tpl, JinjaTemplate) else {"thinking_prefilled": False}


def _calls(msg: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in msg.get("tool_calls", [])
    ]


def _mistral_ids(calls: list[dict[str, Any]]) -> None:
    for k, call in enumerate(calls):
        call["id"] = f"abcdefgh{k}"


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
@settings(max_examples=20)
@given(data=st.data())
def test_round_trip_tool_calls(name: str, data: st.DataObject) -> None:
    tpl = chatfmt.get_template(name)
    calls = data.draw(tool_call_lists(max_calls=2))
    _mistral_ids(calls)
    content = data.draw(st.sampled_from(["", "Let me check.", "Sure!\n", "好的"]))
    user = {"role": "user", "content": data.draw(texts(min_size=1))}
    messages = [user, {"role": "assistant", "content": content, "tool_calls": calls}]
    try:
        out = generated_text(tpl, messages)
        plain = generated_text(tpl, [user, {"role": "assistant", "content": content or ""}])
    except ChatFmtError:
        return  # the format cannot express this conversation (e.g. one call per turn)
    if out == plain:
        return  # the template does not render tool calls in the assistant turn
    if any(w in out for w in tpl.generation_config.stop_words if w):
        return  # without token ids a quoted end-of-turn marker ends the turn (docs/parsing.md)
    msg = assert_stream_equals_whole(out, tpl, tools=TOOLS, **prefill(tpl))
    assert [c.get("error") for c in msg.get("tool_calls", [])] == [None] * len(
        msg.get("tool_calls", [])
    )
    expected = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]
    assert _calls(msg) == expected
    text = msg.get("reasoning_content") if name in TEXT_WITH_CALLS_AS_REASONING else msg["content"]
    got = (text or "").strip()
    if (content or "").strip() in out:
        assert got == (content or "").strip()


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
@settings(max_examples=10)
@given(content=texts(min_size=1))
def test_round_trip_plain_text(name: str, content: str) -> None:
    """Plain answers come back as content (look-alike markers aside, which need token ids)."""
    tpl = chatfmt.get_template(name)
    if any(m in content for m in ("<", "[", "{", "Action:", "functools", "\\")):
        content = "plain answer " + content.replace("<", "").replace("[", "").replace(
            "{", ""
        ).replace("\\", "")
        content = content.replace("Action:", "").replace("functools", "")
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": content}]
    try:
        out = generated_text(tpl, messages)
    except ChatFmtError:
        return
    msg = assert_stream_equals_whole(out, tpl, tools=TOOLS, **prefill(tpl))
    assert "tool_calls" not in msg
    assert (msg["content"] or "").strip() == content.strip()


THINK_TEMPLATES = sorted(  # native ones, as TOOL_TEMPLATES
    t.name
    for t in chatfmt.list_templates()
    if t.reasoning_parser in ("think", "qwen3") and not isinstance(t, PackagedTemplate)
)


@pytest.mark.parametrize("name", THINK_TEMPLATES)
def test_round_trip_reasoning(name: str) -> None:
    tpl = chatfmt.get_template(name)
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "The answer.",
            "reasoning_content": "Let me think\nstep by step.",
        },
    ]
    try:
        out = generated_text(tpl, messages)
    except ChatFmtError:
        pytest.skip("template rejects reasoning_content")
    msg = assert_stream_equals_whole(out, tpl, **prefill(tpl))
    assert (msg["content"] or "").strip() == "The answer."
    if "<think>" in out and "step by step" in out:
        assert msg["reasoning_content"] == "Let me think\nstep by step."
