"""Typed conversion of text arguments (XML-style parameters) by the tool's JSON schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _streaming import assert_stream_equals_whole
from chatfmt.parsing.base import Emitter, merge_deltas
from chatfmt.parsing.xml_values import JsonMembers, parameter_schema, typed_value

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object"},
        "s": {"type": "string"},
        "maybe": {"type": ["integer", "null"]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "level": {"enum": [1, 2, 3]},
        # type names that are not JSON Schema's: read as the type they name
        "f": {"type": "float"},
        "i": {"type": ["int", "null"]},
        "flag": {"type": "bool"},
        "other": {"type": "decimal"},
    },
}


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("n", "42", 42),
        ("n", " 42\n", 42),
        ("n", "4.0", 4),
        ("n", "forty", "forty"),  # does not convert: the text is kept
        ("x", "2.5", 2.5),
        ("x", "3", 3),
        ("x", "inf", "inf"),  # not a JSON number
        ("ok", "true", True),
        ("ok", "False", False),
        ("ok", "yes", "yes"),
        ("tags", '["a", "b"]', ["a", "b"]),
        ("tags", "['a', 'b']", ["a", "b"]),  # Python literal
        ("tags", '{"a": 1}', '{"a": 1}'),  # an object is not an array
        ("opts", '{"a": {"b": [1]}}', {"a": {"b": [1]}}),
        ("s", "007", "007"),
        ("s", " spaced \n", " spaced \n"),
        ("maybe", "null", None),
        ("maybe", "5", 5),
        ("either", "7", 7),
        ("either", "seven", "seven"),
        ("level", "2", 2),
        ("unknown", "42", "42"),  # no schema for the parameter: a string
        ("f", "3.14", 3.14),  # vLLM tests/tool_parsers/test_qwen3coder_tool_parser.py
        ("i", "7", 7),
        ("i", "null", None),
        ("flag", "true", True),
        ("other", "1.5", "1.5"),  # an unknown type name: the text is kept
    ],
)
def test_typed_value_follows_the_schema(key: str, text: str, expected: Any) -> None:
    value = typed_value(text, parameter_schema(SCHEMA, key))
    assert value == expected and type(value) is type(expected)


def test_no_schema_keeps_every_value_a_string() -> None:
    assert typed_value("42", None) == "42"
    assert typed_value('{"a": 1}', parameter_schema(None, "a")) == '{"a": 1}'


def test_json_members_stream_valid_json_arguments() -> None:
    out = Emitter(lambda i: f"call_{i}", None)
    index = out.start_call("f")
    members = JsonMembers(out, index)
    members.member("city", "Zürich")
    members.member("days", 3)
    members.close()
    out.check_arguments(index)
    message = merge_deltas(out.take())
    call = message["tool_calls"][0]
    assert "error" not in call
    assert json.loads(call["function"]["arguments"]) == {"city": "Zürich", "days": 3}


def test_json_members_without_members_is_an_empty_object() -> None:
    out = Emitter(lambda i: f"call_{i}", None)
    index = out.start_call("f")
    JsonMembers(out, index).close()
    assert merge_deltas(out.take())["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize(
    ("template", "text"),
    [
        # vLLM tests/tool_parsers/test_minicpm5xml_tool_parser.py (test_duplicate_param_names_invalid)
        (
            "minicpm5",
            '<function name="get_weather"><param name="city">北京</param>'
            '<param name="city">上海</param></function>',
        ),
        (
            "qwen3_coder",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\n北京\n</parameter>\n"
            "<parameter=city>\n上海\n</parameter>\n</function>\n</tool_call>",
        ),
    ],
)
def test_a_parameter_written_twice_flags_the_call(template: str, text: str) -> None:
    """Both members are kept as written, but a JSON reader keeps only the last: flagged."""
    msg = assert_stream_equals_whole(text, None, parser=template)
    (call,) = msg["tool_calls"]
    assert call["function"]["arguments"] == '{"city": "北京", "city": "上海"}'
    assert call["error"] == "parameter 'city' written twice"
