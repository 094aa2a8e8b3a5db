"""The segment machinery every template shares: Jinja templates use the base ``segments``, and
``render`` writes to a text sink while ``segments`` gets a full builder."""

from __future__ import annotations

from typing import Any

import pytest

import chatfmt
from chatfmt import ValidationError
from chatfmt.jinja import JinjaTemplate
from chatfmt.segments import Kind, Segment, SegmentBuilder, TextSink
from chatfmt.template import RenderContext

USER_HI = {"role": "user", "content": "hi"}

SIMPLE_JINJA = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


# ------------------------------------------------------------------ shared segments logic
def test_jinja_template_uses_the_base_segments() -> None:
    assert "segments" not in JinjaTemplate.__dict__
    t = JinjaTemplate(SIMPLE_JINJA)
    with pytest.raises(ValidationError) as err:
        t.segments([], continue_final_message=True)
    assert err.value.field == "messages"
    segs = t.segments(
        [USER_HI, {"role": "assistant", "content": "part"}], continue_final_message=True
    )
    assert "".join(s.text for s in segs) == "<|user|>hi<|end|><|assistant|>part"


# ------------------------------------------------------------------ render writes to a text sink
class _RecordingTemplate(chatfmt.Template):
    """A user subclass: records the builder class each call gets; one plain builder is fine too."""

    name = "recording-test"

    def __init__(self) -> None:
        self.builders: list[type] = []

    def render_conversation(self, conv: Any, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        self.builders.append(type(b))
        for m in conv.messages:
            b.turn(f"<{m.role}>", m.text, "</s>", "\n", m.index, m.role == "assistant")
        own = SegmentBuilder()  # a builder made directly still works in text mode
        own.control("END")
        b.extend(own.segments)
        return b.segments


def test_render_writes_to_a_text_sink_and_segments_to_a_full_builder() -> None:
    tpl = _RecordingTemplate()
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    text = tpl.render(msgs)
    segs = tpl.segments(msgs)
    assert tpl.builders == [TextSink, SegmentBuilder]
    assert text == "".join(s.text for s in segs) == "<user>hi</s>\n<assistant>yo</s>\nEND"
    assert [(s.kind, s.message, s.trained) for s in segs if s.text == "yo"] == [
        (Kind.CONTENT, 1, True)
    ]
    assert RenderContext().builder is SegmentBuilder
    assert RenderContext(text_only=True).builder is TextSink
