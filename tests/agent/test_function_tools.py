"""Tools from Python functions: schemas from hints and docstrings, validation, the executor."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import pytest

from chatfmt.agent import FunctionTool, ToolExecutor, tool
from chatfmt.errors import ValidationError


def get_weather(
    city: str, unit: Literal["celsius", "fahrenheit"] = "celsius", days: int = 1
) -> str:
    """Get the weather forecast of a city.

    Uses the national weather service.

    Args:
        city: The city's name, e.g. Shanghai.
        unit: Temperature unit.
        days: How many days ahead.
    """
    return f"{city}: sunny, 25 {unit} for {days} day(s)"


async def add(a: float, b: float) -> dict[str, float]:
    """Add two numbers.

    :param a: first addend
    :param b: second addend
    """
    await asyncio.sleep(0)
    return {"sum": a + b}


def test_schema_from_hints_and_docstring() -> None:
    t = FunctionTool(get_weather)
    assert t.openai() == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather forecast of a city.\n\nUses the national weather service.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city's name, e.g. Shanghai."},
                    "unit": {
                        "type": "string",
                        "enum": ["celsius", "fahrenheit"],
                        "default": "celsius",
                        "description": "Temperature unit.",
                    },
                    "days": {
                        "type": "integer",
                        "default": 1,
                        "description": "How many days ahead.",
                    },
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }


def test_rest_docstrings_and_async_functions() -> None:
    t = tool(add)
    props = t.parameters["properties"]
    assert props["a"] == {"type": "number", "description": "first addend"}
    assert t.is_async and t.description == "Add two numbers."
    assert asyncio.run(t.acall({"a": 1, "b": 2.5})) == {"sum": 3.5}


def test_decorator_with_name_and_description() -> None:
    @tool(name="lookup", description="Look a word up.")
    def _lookup(word: str) -> str:
        return word.upper()

    assert isinstance(_lookup, FunctionTool)
    assert _lookup.openai()["function"]["name"] == "lookup"
    assert _lookup.openai()["function"]["description"] == "Look a word up."


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "city: Field required"),
        ({"city": "X", "unit": "kelvin"}, "unit: Input should be 'celsius' or 'fahrenheit'"),
        ({"city": "X", "days": "many"}, "days: Input should be a valid integer"),
        ({"city": "X", "color": "red"}, "color: Extra inputs are not permitted"),
        (["X"], "arguments must be a JSON object"),
    ],
)
def test_arguments_are_validated_before_the_call(arguments: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as err:
        FunctionTool(get_weather).validate(arguments)
    assert err.value.field == "get_weather"


def test_bad_tool_definitions() -> None:
    with pytest.raises(ValidationError, match="identifier"):
        FunctionTool(lambda: 1)  # "<lambda>" is no tool name

    def pos(x: int, /) -> int:
        return x

    with pytest.raises(ValidationError, match="positional-only"):
        FunctionTool(pos)
    with pytest.raises(ValidationError, match="two tools are named 'get_weather'"):
        ToolExecutor([get_weather, get_weather])


def _boom(x: int) -> int:
    raise RuntimeError(f"boom {x}")


async def _sleepy(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "woke"


def _slow_sync(seconds: float) -> str:
    time.sleep(seconds)
    return "done"


def test_executor_turns_every_failure_into_a_result() -> None:
    ex = ToolExecutor([get_weather, _boom, _sleepy, _slow_sync], timeout=0.3)
    calls = [
        ("c1", "get_weather", {"city": "Shanghai"}),
        ("c2", "_boom", {"x": 7}),
        ("c3", "_sleepy", {"seconds": 5}),
        ("c4", "nope", {}),
        ("c5", "get_weather", {"town": "x"}),
        ("c6", "_slow_sync", {"seconds": 0.01}),
    ]
    out = asyncio.run(ex.run(calls))
    assert [o.call_id for o in out] == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert [o.error for o in out] == [False, True, True, True, True, False]
    assert out[0].content == "Shanghai: sunny, 25 celsius for 1 day(s)"
    assert out[1].content == "Error: RuntimeError: boom 7"
    assert out[2].content == "Error: _sleepy timed out after 0.3 s"
    assert out[3].content.startswith("Error: unknown tool 'nope' (tools: get_weather, _boom")
    assert "city: Field required" in out[4].content
    assert out[5].content == "done"


def test_executor_runs_calls_concurrently() -> None:
    """Each call waits until all three have started: only a concurrent executor can finish."""
    started: list[str] = []

    async def rendezvous(tag: str) -> str:
        started.append(tag)
        while len(started) < 3:
            await asyncio.sleep(0.001)
        return tag

    ex = ToolExecutor([rendezvous], timeout=5)
    out = asyncio.run(ex.run([(f"c{i}", "rendezvous", {"tag": t}) for i, t in enumerate("xyz")]))
    assert [(o.content, o.error) for o in out] == [("x", False), ("y", False), ("z", False)]


def test_non_string_results_become_json() -> None:
    out = asyncio.run(ToolExecutor([add]).run([("c", "add", {"a": 1, "b": 1})]))
    assert out[0].content == '{"sum": 2.0}'
