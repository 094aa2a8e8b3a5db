"""DeepSeek V3.2 native template: byte-identical to the official Jinja (transformers as the
oracle), segments, and the refusals of what the official template drops silently."""

from __future__ import annotations

import json
from typing import Any

import pytest

import chatfmt
from chatfmt.errors import UnsupportedFeatureError, ValidationError

from _support import official_render, official_source

FILE = "deepseek-ai-DeepSeek-V3.2.jinja"
TOKENS = {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def call(k: int, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"c{k}",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps(args)},
    }


CONVERSATIONS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": "hi"}],
    [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Again, 中文?"},
    ],
    [
        {"role": "system", "content": ""},
        {"role": "system", "content": "B"},
        {"role": "user", "content": "x"},
    ],
    [
        {"role": "user", "content": "Paris?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [call(0, {"city": "Paris", "days": 2, "opts": [1, "a"], "ok": True})],
        },
        {"role": "tool", "tool_call_id": "c0", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ],
    [
        {"role": "user", "content": "Two?"},
        {"role": "assistant", "content": None, "tool_calls": [call(0, {"city": "A"}), call(1, {})]},
        {"role": "tool", "tool_call_id": "c0", "content": "a"},
        {"role": "tool", "tool_call_id": "c1", "content": "b"},
    ],
    [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "old", "reasoning_content": "old thoughts"},
        {"role": "user", "content": "q2"},
    ],
]


@pytest.mark.parametrize("messages", CONVERSATIONS)
@pytest.mark.parametrize("tools", [None, [WEATHER]])
@pytest.mark.parametrize("options", [{}, {"thinking": True}, {"enable_thinking": True}])
@pytest.mark.parametrize("generation", [True, False])
def test_renders_like_the_official_template(
    shared_dir: Any, messages: Any, tools: Any, options: dict[str, Any], generation: bool
) -> None:
    want = official_render(
        official_source(FILE),
        messages,
        tools=tools,
        add_generation_prompt=generation,
        **TOKENS,
        **options,
    )
    tpl = chatfmt.get_template("deepseek-v3.2")
    got = tpl.render(messages, tools=tools, add_generation_prompt=generation, **options)
    assert got == want
    segments = tpl.segments(messages, tools=tools, add_generation_prompt=generation, **options)
    assert "".join(s.text for s in segments) == want


def test_thinking_writes_reasoning_after_the_last_user() -> None:
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "reasoning_content": "because"},
    ]
    out = chatfmt.render(
        msgs, "deepseek-ai/DeepSeek-V3.2", add_generation_prompt=False, thinking=True
    )
    assert out.endswith("<｜Assistant｜><think>because</think>a<｜end▁of▁sentence｜>")


@pytest.mark.parametrize(
    ("messages", "options", "error", "field"),
    [
        (  # thinking off: the official template drops the reasoning
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", "reasoning_content": "r"},
            ],
            {},
            UnsupportedFeatureError,
            "reasoning_content",
        ),
        (
            [{"role": "developer", "content": "d"}, {"role": "user", "content": "q"}],
            {},
            UnsupportedFeatureError,
            "role",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "tool", "tool_call_id": "x", "content": "r"},
            ],
            {},
            ValidationError,
            "role",
        ),
    ],
)
def test_refuses_what_the_official_template_drops(
    messages: Any, options: dict[str, Any], error: type[Exception], field: str
) -> None:
    with pytest.raises(error) as info:
        chatfmt.render(messages, "deepseek-v3.2", **options)
    assert getattr(info.value, "field", None) == field


def test_is_native_and_recognized() -> None:
    tpl = chatfmt.get_template("deepseek-ai/DeepSeek-V3.2")
    assert tpl.name == "deepseek-v3.2" and FILE in tpl.official_templates
    assert (tpl.tool_parser, tpl.reasoning_parser) == ("deepseek_v32", "think")
