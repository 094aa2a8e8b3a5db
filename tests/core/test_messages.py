"""The message model: accepted shapes, aliases and clear errors for every invalid input class."""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

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


USER_HI = {"role": "user", "content": "hi"}


# ------------------------------------------------------------------ protocol
def test_tools_not_iterable() -> None:
    with pytest.raises(ValidationError) as err:
        chatfmt.render([USER_HI], "qwen3", tools=5)  # type: ignore[arg-type]
    assert err.value.field == "tools"


def _call(arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": arguments}}],
    }


def test_too_deep_arguments() -> None:
    deep_text = '{"a":' + "[" * 100000 + "]" * 100000 + "}"
    deep_obj: list[Any] = []
    for _ in range(100000):
        deep_obj = [deep_obj]
    for args in (deep_text, {"a": deep_obj}):
        with pytest.raises(ValidationError) as err:
            validate_conversation([USER_HI, _call(args)])
        assert (err.value.index, err.value.field) == (1, "tool_calls[0].function.arguments")


def test_lone_surrogates_in_content_pass_render_and_fail_tokenization(shared_dir: Any) -> None:
    """Content is a str in and a str out; it is checked where it must become UTF-8 bytes."""
    from chatfmt import TokenizationError, encode, load_tokenizer

    msgs = [USER_HI, {"role": "assistant", "content": "a\ud800b"}]
    assert "a\ud800b" in chatfmt.render(msgs, "qwen2.5")
    tok = load_tokenizer(shared_dir / "tokenizers" / "qwen3")
    with pytest.raises(TokenizationError, match=r"messages\[1\]: contains a lone surrogate"):
        encode(msgs, "qwen2.5", tok)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "user", "content": "ok", "name": "n\ud800"}, "name"),
        (_call('{"a": "\ud800"}'), "tool_calls[0].function.arguments"),
        (_call({"a": "\ud800"}), "tool_calls[0].function.arguments"),
    ],
)
def test_lone_surrogates_are_rejected(message: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        validate_conversation([USER_HI, message])
    assert (err.value.index, err.value.field) == (1, field)


def test_surrogate_in_tool_schema_is_rejected_and_valid_unicode_passes() -> None:
    tool = {"type": "function", "function": {"name": "f", "description": "d\ud800"}}
    with pytest.raises(ValidationError) as err:
        validate_conversation([USER_HI], [tool])
    assert err.value.field == "tools[0].function.description"
    conv = validate_conversation([{"role": "user", "content": "你好 🙂 é"}])
    assert conv.messages[0].content == "你好 🙂 é"


@pytest.mark.parametrize("value", ["", 0, {}])
def test_tool_calls_of_wrong_type(value: Any) -> None:
    with pytest.raises(ValidationError) as err:
        validate_conversation([USER_HI, {"role": "assistant", "content": "a", "tool_calls": value}])
    assert (err.value.index, err.value.field) == (1, "tool_calls")


def test_tool_calls_null_or_empty_is_no_calls() -> None:
    for value in (None, []):
        conv = validate_conversation([{"role": "assistant", "content": "a", "tool_calls": value}])
        assert conv.messages[0].tool_calls == ()


@pytest.mark.parametrize("key", ["tool_call", "toolcalls", "function_call"])
def test_near_miss_keys_are_rejected(key: str) -> None:
    msg = {"role": "assistant", "content": "a", key: [{"type": "function"}]}
    with pytest.raises(ValidationError) as err:
        validate_conversation([USER_HI, msg])
    assert (err.value.index, err.value.field) == (1, key)
    assert "tool_calls" in str(err.value)


def test_other_extra_keys_are_ignored() -> None:
    # OpenAI clients send fields such as refusal/audio/function_call=None
    msg = {
        "role": "assistant",
        "content": "a",
        "refusal": None,
        "audio": None,
        "function_call": None,
    }
    conv = validate_conversation([USER_HI, msg])
    assert conv.messages[1].content == "a"
