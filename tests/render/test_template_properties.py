"""Properties every registered template must have (run over the whole registry)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chatfmt
from chatfmt import ChatFmtError, Kind, Template

from _support import conversations

#: the slow tier (`pytest -m "not slow"` leaves it out; CI runs it)
pytestmark = pytest.mark.slow

CHAT_TEMPLATES = [t for t in chatfmt.list_templates() if t.generation_config.capability == "chat"]
IDS = [t.name for t in CHAT_TEMPLATES]
#: Registry-wide properties run once per template (~200): a few conversations each, every run
#: a fresh set outside CI; the family tests go deeper into each format.
_PER_TEMPLATE = settings(max_examples=20)


def _segments(
    tpl: Template, messages: list[dict[str, Any]], **kw: Any
) -> list[chatfmt.Segment] | None:
    try:
        return tpl.segments(messages, now="2026-11-22", **kw)
    except ChatFmtError:
        return None  # the format rejects this conversation (tested per family)


@pytest.mark.parametrize("tpl", CHAT_TEMPLATES, ids=IDS)
@_PER_TEMPLATE
@given(data=conversations(tools=False, max_turns=3), gen=st.booleans())
def test_render_is_join_of_segments_and_input_untouched(
    tpl: Template, data: dict[str, Any], gen: bool
) -> None:
    messages = data["messages"]
    before = copy.deepcopy(messages)
    segs = _segments(tpl, messages, add_generation_prompt=gen)
    assert messages == before
    if segs is None:
        return
    text = "".join(s.text for s in segs)
    assert tpl.render(messages, add_generation_prompt=gen, now="2026-11-22") == text
    validated = chatfmt.validate_conversation(messages)  # renders the same without re-validation
    assert tpl.render(validated, add_generation_prompt=gen, now="2026-11-22") == text
    assert all(s.text for s in segs)
    n = len(messages)
    assert all(s.message is None or 0 <= s.message < n for s in segs)
    # control text is never attributed as trained unless it belongs to an assistant message
    for s in segs:
        if s.trained:
            assert s.message is not None and messages[s.message]["role"] == "assistant"


@pytest.mark.parametrize("tpl", CHAT_TEMPLATES, ids=IDS)
@_PER_TEMPLATE
@given(data=conversations(tools=False, max_turns=4, end_with="user"))
def test_follow_up_render_appends_to_what_the_engine_holds(
    tpl: Template, data: dict[str, Any]
) -> None:
    """render(prev)+reply+stop, then render(new, sequence_start=False), equals render(all)."""
    messages = data["messages"]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if len(users) < 2:
        return
    if not tpl.prefix_stable and messages[0]["role"] == "system":
        return  # the format moves the system prompt to the last user turn
    cut = users[-1]  # new turn = the last user message
    full = _segments(tpl, messages)
    if full is None:
        return
    # What the engine holds: everything up to the end of the last trained segment of the reply.
    reply = cut - 1
    ends = [i for i, s in enumerate(full) if s.message == reply and s.trained]
    if not ends:
        # Only formats whose turns end with an EOS token they do not write (Baichuan2, GLM-4)
        # have nothing trained for an empty reply; a non-empty one is always trained.
        assert not messages[reply]["content"].strip(), (
            f"{tpl.name}: the assistant reply has no trained segment"
        )
        return
    held = "".join(s.text for s in full[: ends[-1] + 1])
    follow = tpl.render(messages[cut:], sequence_start=False, now="2026-11-22")
    assert held + follow == "".join(s.text for s in full)
    if not tpl.supports_reasoning:
        prompt = tpl.render(messages[:reply], now="2026-11-22")
        assert held.startswith(prompt)


@pytest.mark.parametrize("tpl", CHAT_TEMPLATES, ids=IDS)
def test_assistant_text_is_trained_content(tpl: Template) -> None:
    messages = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there"}]
    segs = _segments(tpl, messages, add_generation_prompt=False)
    assert segs is not None, f"{tpl.name} rejects the simplest conversation"
    trained = "".join(s.text for s in segs if s.trained)
    assert "Hi there" in trained
    assert "Hello" not in trained
    assert any(s.kind is Kind.CONTENT and "Hello" in s.text and s.message == 0 for s in segs)


@pytest.mark.parametrize("tpl", CHAT_TEMPLATES, ids=IDS)
def test_continue_final_message_leaves_reply_open(tpl: Template) -> None:
    messages = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Partial answer"},
    ]
    try:
        text = tpl.render(messages, continue_final_message=True, now="2026-11-22")
    except ChatFmtError:
        return
    assert text.endswith("Partial answer")


def test_completion_templates_return_prompt_unchanged() -> None:
    for tpl in chatfmt.list_templates():
        if tpl.generation_config.capability == "completion":
            assert tpl.render("hi") == "hi"
            assert tpl.render([{"role": "user", "content": "hi"}]) == "hi"
