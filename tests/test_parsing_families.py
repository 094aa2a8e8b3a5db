"""Family parsers: what the stream sends equals the whole parse, and the formats of templates
that had no parser or a wrong one (issue 11, items 4 and 5). Every case is checked whole and
streamed in every chunking (``_streaming.chunkings``: every single cut of short outputs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _streaming import assert_stream_equals_whole, chunkings, sent_text, stream_deltas

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    },
}


def arguments(msg: dict[str, Any]) -> list[tuple[str, Any, str | None]]:
    """(name, decoded arguments, error) of each call."""
    out = []
    for call in msg.get("tool_calls", []):
        fn = call["function"]
        try:
            args = json.loads(fn["arguments"])
        except ValueError:
            args = fn["arguments"]
        out.append((fn["name"], args, call.get("error")))
    return out


# ------------------------------------------------------------ item 4: stream ≡ whole, delta by delta
GLM45_CALLS = (
    "\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    "\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>"
)


@pytest.mark.parametrize(
    ("template", "text", "options"),
    [
        # GLM-4.5 with enable_thinking=False: the prompt ends "<think></think>", output starts "\n"
        ("glm4.5", GLM45_CALLS, {"enable_thinking": False}),
        ("glm4.5", "\n<think></think>" + GLM45_CALLS, {}),
        (
            "qwen2.5",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "P"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "R"}}\n</tool_call>\n',
            {},
        ),
    ],
)
def test_whitespace_around_calls_is_never_sent_as_content(
    template: str, text: str, options: dict[str, Any]
) -> None:
    """The whole parse has no content; no chunking may send a whitespace content delta."""
    msg = assert_stream_equals_whole(text, template, tools=[WEATHER], **options)
    assert msg["content"] is None
    assert [a[:2] for a in arguments(msg)] == [
        ("get_weather", {"city": c}) for c in (("Paris", "Rome") if "Paris" in text else "PR")
    ]
    for chunks in chunkings(text):
        deltas = stream_deltas(chunks, template, tools=[WEATHER], **options)
        assert not any("content" in d for d in deltas), (chunks, deltas)


def test_whitespace_is_content_when_text_follows_or_no_call_comes() -> None:
    for text, content in (("\n\n", "\n\n"), ("\n<tool_call>{}</tool_call>x", "\nx")):
        msg = assert_stream_equals_whole(text, "qwen2.5")
        assert msg["content"] == content
        assert sent_text(stream_deltas([text], "qwen2.5"), "content") == content
