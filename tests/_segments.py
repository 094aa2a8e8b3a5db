"""Checks every template's segments must pass: they join to the render, only assistant text is
trained, message text stands in its content segments, and a follow-up render continues what an
engine holds."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from chatfmt.segments import Kind, Segment, join
from chatfmt.template import Template

Messages = list[dict[str, Any]]


def assert_segments_consistent(
    tpl: Template,
    messages: Messages,
    *,
    content_roles: Collection[str] = ("user",),
    strip: bool = False,
    **render_kwargs: Any,
) -> list[Segment]:
    """The segments join to ``render``, no segment is empty, trained ones belong to assistant
    messages, and the content of each message whose role is in ``content_roles`` stands in its
    content segments (``strip``: its stripped content, for formats that trim it)."""
    segs = tpl.segments(messages, **render_kwargs)
    assert join(segs) == tpl.render(messages, **render_kwargs)
    for s in segs:
        assert s.text
        if s.trained:
            assert s.message is not None and messages[s.message]["role"] == "assistant"
    for i, m in enumerate(messages):
        text = m.get("content") or ""
        text = text.strip() if strip else text
        if m["role"] in content_roles and text:
            body = "".join(s.text for s in segs if s.message == i and s.kind is Kind.CONTENT)
            assert text in body
    return segs


def assert_follow_up_continues(
    tpl: Template, messages: Messages, reply: int, **render_kwargs: Any
) -> bool:
    """What an engine holds after assistant message ``reply`` (the render through its last
    trained segment) followed by ``render(messages[reply + 1:], sequence_start=False)`` equals
    the whole render. False (nothing checked) when no segment of the reply is trained."""
    segs = tpl.segments(messages, **render_kwargs)
    ends = [i for i, s in enumerate(segs) if s.message == reply and s.trained]
    if not ends:
        return False
    tail = tpl.render(messages[reply + 1 :], sequence_start=False, **render_kwargs)
    assert join(segs[: ends[-1] + 1]) + tail == join(segs)
    return True
