"""What a lagent user expects of an agent (issue 22 item 4): toolkit names such as
``Calculator.add``, ``chat("a plain string")``, generation settings per call, tool results
that carry an image or a file, and the interpreter's per-execution timeout."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from chatfmt.agent import Agent, Attachment, CodeInterpreter, FunctionTool, tool
from chatfmt.agent.events import Final
from chatfmt.backends import ScriptedBackend
from chatfmt.errors import ValidationError

ADD_CALL = (
    '<|action_start|><|plugin|>\n{"name": "Calculator.add", "parameters": {"a": 2, "b": 3}}'
    "<|action_end|>"
)


@tool(name="Calculator.add")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_toolkit_name_is_offered_called_and_rendered() -> None:
    backend = ScriptedBackend([ADD_CALL, "2 + 3 = 5.<|im_end|>"])
    result = Agent(backend, template="internlm2", tools=[add]).chat("What is 2 + 3?")
    assert '"name": "Calculator.add"' in backend.prompts[0]
    (observation,) = result.steps[0].observations
    assert (observation.name, observation.content, observation.error) == (
        "Calculator.add",
        "5",
        False,
    )
    assert f"<|im_start|>assistant\n{ADD_CALL}<|im_end|>\n" in backend.prompts[1]
    assert result.answer == "2 + 3 = 5."


def test_a_name_is_checked_against_the_templates_format() -> None:
    """A dotted name is refused only where the template's own format cannot carry it."""
    with pytest.raises(
        ValidationError, match=r"'muse-glimmer' cannot carry the tool name 'Calculator.add'"
    ):
        Agent(ScriptedBackend([]), template="muse-glimmer", tools=[add])
    for bad in ("Calculator.", "get weather", "1abc"):
        with pytest.raises(ValidationError, match="identifiers joined by dots"):
            FunctionTool(add.fn, name=bad)


def test_a_plain_string_is_one_user_message() -> None:
    backend = ScriptedBackend(["Hello!<|im_end|>"])
    result = Agent(backend, template="internlm2").chat("Hi")
    assert result.messages[0] == {"role": "user", "content": "Hi"}
    assert backend.prompts[0].endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert result.answer == "Hello!"


def test_generation_settings_per_call() -> None:
    backend = ScriptedBackend(["a<|im_end|>", "b<|im_end|>", "c<|im_end|>", "d<|im_end|>"])
    agent = Agent(backend, template="internlm2", sampling={"temperature": 0.5, "max_tokens": 64})
    agent.chat("x", temperature=0.1, max_tokens=7)
    agent.chat("x")
    events = list(agent.stream_chat("x", top_p=0.5))
    assert isinstance(events[-1], Final)
    asyncio.run(agent.achat("x", seed=3))
    got = [(r.temperature, r.max_tokens, r.top_p, r.seed) for r in backend.requests]
    default_top_p = backend.requests[0].top_p
    assert got == [
        (0.1, 7, default_top_p, None),
        (0.5, 64, default_top_p, None),
        (0.5, 64, 0.5, None),
        (0.5, 64, default_top_p, 3),
    ]
    with pytest.raises(ValidationError, match="temprature"):
        agent.chat("x", temprature=0.1)
    assert len(backend.requests) == 4  # refused before any model call


@tool(name="Plotter")
def plotter(title: str) -> list[Any]:
    """Plot a chart."""
    return [
        Attachment("charts/sales.png"),
        f"plotted {title}",
        Attachment("charts/sales.csv", "file"),
    ]


def test_a_tool_returns_an_image_and_a_file() -> None:
    """As the interpreter writes its images (and the seed's environment turns show them):
    one Markdown link per line, ``![image](PATH)`` for an image, ``[file](PATH)`` for a file."""
    call = '<|action_start|><|plugin|>\n{"name": "Plotter", "parameters": {"title": "sales"}}<|action_end|>'
    backend = ScriptedBackend([call, "Here it is.<|im_end|>"])
    result = Agent(backend, template="internlm2", tools=[plotter]).chat("Plot sales.")
    (observation,) = result.steps[0].observations
    text = "![image](charts/sales.png)\nplotted sales\n[file](charts/sales.csv)"
    assert observation.content == text and observation.images == (Path("charts/sales.png"),)
    assert f"<|im_start|>environment name=<|plugin|>\n{text}<|im_end|>\n" in backend.prompts[1]
    with pytest.raises(ValidationError, match="an image or a file"):
        Attachment("x.bin", "blob")  # type: ignore[arg-type]


def test_interpreter_timeout() -> None:
    agent = Agent(
        ScriptedBackend([]), template="internlm2", interpreter=True, interpreter_timeout=5
    )
    try:
        assert isinstance(agent.interpreter, CodeInterpreter) and agent.interpreter.timeout == 5
    finally:
        agent.close()
    with pytest.raises(ValidationError, match="interpreter_timeout"):
        Agent(
            ScriptedBackend([]),
            template="internlm2",
            interpreter=CodeInterpreter(),
            interpreter_timeout=5,
        )
