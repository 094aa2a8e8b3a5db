"""A reasoning wish (on/off, effort) as each template's own thinking switch."""

from __future__ import annotations

from typing import Any

import pytest

import chatfmt
from chatfmt.thinking import thinking_options


@pytest.mark.parametrize(
    ("name", "off", "high"),
    [
        ("qwen3", {"enable_thinking": False}, {"enable_thinking": True}),
        ("granite-3.3", {"thinking": False}, {"thinking": True}),
        ("gpt-oss", {"reasoning_effort": "low"}, {"reasoning_effort": "high"}),
        ("llama3.1", {}, {}),  # no switch: the template thinks as it always does
    ],
)
def test_each_template_gets_its_own_switch(
    name: str, off: dict[str, Any], high: dict[str, Any]
) -> None:
    template = chatfmt.get_template(name)
    assert thinking_options(template, enabled=False) == off
    assert thinking_options(template, effort="high") == high
    assert thinking_options(template) == {}  # nothing asked: the template's default
    template.check_options(off)  # options the template knows


def test_minimal_effort_is_off_where_a_template_can_only_switch() -> None:
    assert thinking_options(chatfmt.get_template("qwen3"), effort="minimal") == {
        "enable_thinking": False
    }
    assert thinking_options(chatfmt.get_template("gpt-oss"), effort="minimal") == {
        "reasoning_effort": "low"
    }
