"""``tool_choice`` in the agent: the first reply of a chat is forced (prefill + grammar), later
replies are free; the embedded SmolLM2 (paired with the Hermes format) then calls tools validly."""

from __future__ import annotations

import json
from typing import Any

import pytest

import chatfmt
from chatfmt.agent.loop import Agent
from chatfmt.backends import ScriptedBackend
from chatfmt.errors import ValidationError


def get_weather(city: str) -> dict[str, Any]:
    """Get the weather of a city.

    Args:
        city: The city.
    """
    return {"city": city, "temperature": 21}


def get_time(zone: str) -> str:
    """Get the time in a time zone.

    Args:
        zone: The zone.
    """
    return "12:00"


QWEN = chatfmt.get_template("qwen2.5")
ASK = [{"role": "user", "content": "Weather in Oslo?"}]


def test_a_named_choice_prefills_the_first_reply_only() -> None:
    backend = ScriptedBackend(['{"city": "Oslo"}}\n</tool_call>', "21 degrees."])
    agent = Agent(backend, template=QWEN, tools=[get_weather, get_time], tool_choice="get_weather")
    result = agent.chat(ASK)
    assert result.answer == "21 degrees."
    first, second = backend.requests
    prefill = '<tool_call>\n{"name": "get_weather", "arguments": '
    assert first.prompt.endswith("<|im_start|>assistant\n" + prefill)
    assert first.constraint is not None and first.constraint.prefill == prefill
    assert second.prompt.endswith("<|im_start|>assistant\n")  # after the result: "auto"
    assert second.constraint is not None and second.constraint.trigger is not None
    call = result.messages[1]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Oslo"})


def test_required_prefills_the_call_opening() -> None:
    backend = ScriptedBackend(['get_time", "arguments": {"zone": "UTC"}}\n</tool_call>', "Noon."])
    agent = Agent(
        backend,
        template=QWEN,
        tools=[get_weather, get_time],
        tool_choice="required",
        parallel_tool_calls=False,
    )
    result = agent.chat(ASK)
    assert backend.requests[0].prompt.endswith('<tool_call>\n{"name": "')
    assert result.messages[1]["tool_calls"][0]["function"]["name"] == "get_time"
    assert result.answer == "Noon."


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("get_date", "one of the tools (get_weather), got 'get_date'"),
        ({"type": "function", "function": {}}, "one of the tools (get_weather)"),
    ],
)
def test_an_unknown_choice_names_the_tools(choice: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        Agent(ScriptedBackend([]), template=QWEN, tools=[get_weather], tool_choice=choice)
    assert e.value.field == "tool_choice"


def test_a_forced_choice_without_tools_is_refused() -> None:
    with pytest.raises(ValidationError, match="needs function tools") as e:
        Agent(ScriptedBackend([]), template=QWEN, tool_choice="required")
    assert e.value.field == "tool_choice"


@pytest.mark.slow  # the embedded model, a few dozen tokens per seed
@pytest.mark.parametrize("seed", [1, 2])
def test_the_embedded_model_calls_the_named_tool_validly(seed: int) -> None:
    pytest.importorskip("llama_cpp")
    from chatfmt.backends.llamacpp import LlamaCppBackend

    try:
        backend = LlamaCppBackend()
    except chatfmt.ChatFmtError as exc:
        pytest.skip(str(exc))
    template = chatfmt.with_tool_format(chatfmt.get_template("smollm2"), "hermes")
    agent = Agent(
        backend,
        template=template,
        tools=[get_weather, get_time],
        tool_choice="get_weather",
        parallel_tool_calls=False,
        max_turn=2,
        sampling={"max_tokens": 40, "seed": seed, "temperature": 0.8},
    )
    result = agent.chat(ASK)
    call = result.messages[1]["tool_calls"][0]["function"]
    assert call["name"] == "get_weather"
    arguments = json.loads(call["arguments"])
    assert set(arguments) == {"city"} and isinstance(arguments["city"], str)
    assert result.messages[2]["role"] == "tool" and "21" in result.messages[2]["content"]
