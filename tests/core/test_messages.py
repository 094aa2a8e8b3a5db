"""The message model: accepted shapes, aliases and clear errors for every invalid input class."""

from __future__ import annotations

import contextlib
import copy
import json

import pytest

import chatfmt
from chatfmt import ValidationError, validate_conversation


def test_roles_and_aliases() -> None:
    conv = validate_conversation(
        [
            {"role": "developer", "content": "d"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"x": 1}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "g", "arguments": {"y": [1, 2]}},
                    },
                ],
            },
            {"role": "environment", "content": "r1", "tool_call_id": "c1"},
            {"role": "observation", "content": "r2", "tool_call_id": "c2"},
            {"role": "function", "name": "f", "content": "r3"},
        ]
    )
    roles = [m.role for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "tool"]
    assert [m.source_role for m in conv.messages][-3:] == ["environment", "observation", "function"]
    assert conv.messages[1].content == "ab"
    first, second = conv.messages[2].tool_calls
    assert (
        first.arguments == {"x": 1}
        and first.arguments_json == '{"x": 1}'
        and first.arguments_given_as_string
    )
    assert second.arguments == {"y": [1, 2]} and json.loads(second.arguments_json) == {"y": [1, 2]}
    assert not second.arguments_given_as_string


def test_code_interpreter_call_and_tools() -> None:
    conv = validate_conversation(
        [
            {"role": "user", "content": "plot"},
            {
                "role": "assistant",
                "content": "ok",
                "tool_calls": [
                    {
                        "id": "ci",
                        "type": "code_interpreter",
                        "code_interpreter": {"input": "print(1)"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "ci", "content": "1"},
        ],
        tools=[{"type": "code_interpreter"}, {"type": "function", "function": {"name": "f"}}],
    )
    call = conv.messages[1].tool_calls[0]
    assert call.is_code and call.code == "print(1)"
    assert conv.has_code_interpreter and [t.name for t in conv.function_tools] == ["f"]
    assert call.to_openai() == {
        "id": "ci",
        "type": "code_interpreter",
        "code_interpreter": {"input": "print(1)"},
    }


@pytest.mark.parametrize(
    ("messages", "tools", "index", "field", "needle"),
    [
        ([{"role": "wizard", "content": "x"}], None, 0, "role", "unknown role"),
        ([{"content": "x"}], None, 0, "role", "role"),
        ([{"role": "user", "content": 5}], None, 0, "content", "content must be"),
        (
            [{"role": "user", "content": [{"type": "image_url"}]}],
            None,
            0,
            "content[0].type",
            "unsupported content part",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"type": "function", "function": {"name": "f", "arguments": "{bad"}}
                    ],
                },
            ],
            None,
            1,
            "tool_calls[0].function.arguments",
            "not valid JSON",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}],
                },
            ],
            None,
            1,
            "tool_calls[0].function.name",
            "name",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [{"type": "retrieval"}]},
            ],
            None,
            1,
            "tool_calls[0].type",
            "unknown tool call type",
        ),
        (
            [{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}],
            None,
            1,
            "role",
            "without a preceding",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f"}}],
                },
                {"role": "tool", "content": "r", "tool_call_id": "zzz"},
            ],
            None,
            2,
            "tool_call_id",
            "matches no earlier",
        ),
        (
            [
                {
                    "role": "user",
                    "content": "q",
                    "tool_calls": [{"type": "function", "function": {"name": "f"}}],
                }
            ],
            None,
            0,
            "tool_calls",
            "only assistant",
        ),
        ([{"role": "user", "content": "q", "name": 3}], None, 0, "name", "must be a string"),
        (
            [{"role": "user", "content": "q"}],
            [{"type": "function", "function": {}}],
            None,
            "tools[0].function.name",
            "non-empty",
        ),
        (
            [{"role": "user", "content": "q"}],
            [{"type": "browser"}],
            None,
            "tools[0].type",
            "unknown tool type",
        ),
        ("hello", None, None, "messages", "list"),
    ],
)
def test_invalid_input_names_index_and_field(messages, tools, index, field, needle) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as info:
        validate_conversation(messages, tools)
    err = info.value
    assert err.index == index
    assert err.field == field
    assert needle in str(err)
    if index is not None:
        assert f"messages[{index}]" in str(err)


def test_render_rejects_bad_input_with_chatfmt_error() -> None:
    with pytest.raises(chatfmt.ChatFmtError, match=r"messages\[1\]\.role"):
        chatfmt.render(
            [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}], "chatml"
        )


def test_caller_objects_are_not_mutated() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"k": [1]}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "r"},
    ]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    before = copy.deepcopy((messages, tools))
    validate_conversation(messages, tools)
    for name in ("qwen2.5", "llama3.1", "internlm2", "glm4.5", "mistral-v7"):
        with contextlib.suppress(chatfmt.ChatFmtError):
            chatfmt.render_segments(messages, name, tools=tools)
    assert (messages, tools) == before
