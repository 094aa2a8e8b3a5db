"""Qwen3's ``<tool_call>`` inside a ``<think>`` block the model never closed.

The call ends the reasoning there and is read as a call, whole and in every chunking; a
``<tool_call>`` followed by ``</think>`` is reasoning (a drafted call, as llama.cpp reads
it). With token ids, only a real ``<tool_call>`` token counts.
"""

from __future__ import annotations

from typing import Any

import pytest

from _streaming import assert_stream_equals_whole, decoded_calls
from chatfmt import render
from chatfmt.parsing import StreamParser, merge_deltas, parse

HERMES_CALL = '<tool_call>\n{"name": "read", "arguments": {"path": "/etc/hosts"}}\n</tool_call>'
XML_CALL = (
    "<tool_call>\n<function=read>\n<parameter=path>\n/etc/hosts\n</parameter>\n"
    "</function>\n</tool_call>"
)
READ = [("read", {"path": "/etc/hosts"}, None)]


@pytest.mark.parametrize(
    ("template", "call", "kwargs"),
    [
        ("qwen3", HERMES_CALL, {}),  # the model opens <think> itself
        ("qwen3", HERMES_CALL, {"thinking_prefilled": True}),  # the prompt opened it
        ("qwq", HERMES_CALL, {"thinking_prefilled": True}),
        ("qwen3.5", XML_CALL, {}),  # its generation prompt opens the block
        (None, HERMES_CALL, {"parser": "hermes", "reasoning_parser": "qwen3"}),
    ],
)
def test_call_ends_unclosed_thinking(template: Any, call: str, kwargs: dict[str, Any]) -> None:
    opener = "" if kwargs.get("thinking_prefilled") or template == "qwen3.5" else "<think>\n"
    text = f"{opener}I need to read the file.\n\n{call}"
    msg = assert_stream_equals_whole(text, template, **kwargs)
    assert msg.get("reasoning_content") == "I need to read the file."
    assert msg["content"] is None
    assert decoded_calls(msg) == READ


def test_a_call_drafted_in_closed_thinking_is_reasoning() -> None:
    """``</think>`` after the call: the call was drafted in the thinking, not made (llama.cpp's
    Qwen3.5 case); streamed, the text from the ``<tool_call>`` waits for what decides."""
    draft = HERMES_CALL.replace("/etc/hosts", "/draft")
    text = f"<think>\nplan:\n{draft}\nthen\n</think>\n\n{HERMES_CALL}"
    msg = assert_stream_equals_whole(text, "qwen3")
    assert msg.get("reasoning_content") == f"plan:\n{draft}\nthen"
    assert decoded_calls(msg) == READ and msg["content"] is None
    # two candidates, the block closed after both: all reasoning
    text = f"<think>\n{draft}\n{draft}</think>ok"
    msg = assert_stream_equals_whole(text, "qwen3")
    assert msg.get("reasoning_content") == f"{draft}\n{draft}" and msg["content"] == "ok"


def test_streamed_the_held_call_comes_at_the_end() -> None:
    parser = StreamParser("qwen3", id_factory=lambda i: f"call_{i}")
    first = parser.feed("<think>\nI need to read the file.\n\n" + HERMES_CALL[:30])
    assert [type(d).__name__ for d in first] == ["ReasoningDelta"]
    assert not parser.feed(HERMES_CALL[30:])  # held: a </think> may still follow
    assert decoded_calls(merge_deltas(first + parser.finish())) == READ


def test_only_the_reasoning_parser_of_qwen3_ends_at_a_call() -> None:
    """The generic ``think`` parser (DeepSeek R1 and others) keeps the text reasoning."""
    text = f"<think>\nI need to read the file.\n\n{HERMES_CALL}"
    msg = assert_stream_equals_whole(text, parser="hermes", reasoning_parser="think")
    assert msg.get("reasoning_content") == text.removeprefix("<think>\n")
    assert not msg.get("tool_calls")


def test_a_look_alike_call_marker_stays_reasoning() -> None:
    """With token ids, ``<tool_call>`` spelled by ordinary tokens is the model's text."""
    ids = {"<think>": 151667, "</think>": 151668, "<tool_call>": 151657, "</tool_call>": 151658}
    text = "<think>\nI write <tool_call> as text.\n</think>\n\nok"
    seq = [151667, 1, 2, 3, 4, 151668, 5]  # no <tool_call> id: the marker is a look-alike
    msg = parse(text, "qwen3", special_token_ids=ids, token_ids=seq)
    assert msg.get("reasoning_content") == "I write <tool_call> as text."
    assert msg["content"] == "ok"


def test_rendered_history_closes_the_thinking() -> None:
    """Sent back as history, the reply renders in the template's own form: the reasoning
    block closed before the call (what the model would have written with ``</think>``)."""
    msg = parse(f"<think>\nI need to read the file.\n\n{HERMES_CALL}", "qwen3")
    prompt = render(
        [{"role": "user", "content": "hosts?"}, msg], "qwen3", add_generation_prompt=False
    )
    assert prompt.endswith(
        "<|im_start|>assistant\n<think>\nI need to read the file.\n</think>\n\n"
        + HERMES_CALL
        + "<|im_end|>\n"
    )
