"""chatfmt's InternLM2 agent next to lagent 0.2.4's ``Internlm2Agent``, run for real.

``tests/data/lagent/lagent_0.2.4.json`` holds what lagent 0.2.4 did on a few conversations
(its own ``BaseAction`` / ``@tool_api`` tools, scripted model outputs): every prompt it sent
and every parse it made; ``tests/data/lagent/record.py`` recorded it and says how to again.
chatfmt's :class:`~chatfmt.agent.Agent` runs the same conversations with the same outputs,
its tools being Python functions with the same signatures, and lagent 0.2.4's prompt texts
as template options (:data:`~chatfmt.families.internlm.lagent.LAGENT_0_2_4_OPTIONS`). The
prompts are lagent's byte for byte but for two choices, each checked where it shows:

- a plugin call stays in the history as the model wrote it (lagent re-serializes it with
  ``json.dumps``; a model that wrote it compact reads it compact again);
- an image a tool returns is ``![image](PATH)``, as the seed's environment turns and
  chatfmt's code interpreter write it (lagent writes ``[image](PATH)``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import chatfmt
from chatfmt.agent import Agent, Attachment, ExecutionResult, tool
from chatfmt.backends import ScriptedBackend
from chatfmt.families.internlm import lagent as lagent_texts
from chatfmt.families.internlm.lagent import LAGENT_0_2_4_META_CN, LAGENT_0_2_4_OPTIONS

RECORD = json.loads(
    (Path(__file__).parents[1] / "data" / "lagent" / "lagent_0.2.4.json").read_text("utf-8")
)
CONVERSATIONS = {c["name"]: c for c in RECORD["conversations"]}


# ------------------------------------------------------------------ the tools, as chatfmt's
@tool(name="Weather")
def weather(location: str, unit: str = "celsius") -> dict[str, Any]:
    """Get the current weather in a city.

    Args:
        location: the city, e.g. Paris
        unit: celsius or fahrenheit
    """
    return {"location": location, "temperature": 21, "unit": unit}


@tool(name="Calculator.add")
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: augend
        b: addend
    """
    return a + b


@tool(name="Calculator.mul")
def mul(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: multiplicand
        b: multiplier
    """
    return a * b


@tool(name="Plotter")
def plotter(title: str) -> list[Any]:
    """Plot a chart and return its image.

    Args:
        title: the chart title
    """
    return [Attachment("/tmp/plot.png"), f"plotted {title}"]


TOOLS = {"Weather": [weather], "Calculator": [add, mul], "Plotter": [plotter]}


class ScriptedInterpreter:
    """Stands for the Jupyter kernel, as lagent's recording did (it prints ``2``)."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def arun(self, code: str) -> ExecutionResult:
        self.ran.append(code)
        return ExecutionResult(text="2", stdout="2\n")

    def close(self) -> None:
        pass


def _chatfmt_prompts(conv: dict[str, Any]) -> tuple[list[str], Any, ScriptedInterpreter]:
    backend = ScriptedBackend([c["output"] for c in conv["calls"]])
    interpreter = ScriptedInterpreter()
    agent = Agent(
        backend,
        template="internlm2",
        tools=[t for name in conv_plugins(conv) for t in TOOLS[name]],
        interpreter=interpreter if conv["interpreter"] else None,  # type: ignore[arg-type]
        options=LAGENT_0_2_4_OPTIONS,
        max_turn=4,
    )
    result = agent.chat(
        [
            {"role": "system", "content": LAGENT_0_2_4_META_CN},
            {"role": "user", "content": conv["message"]},
        ]
    )
    return backend.prompts, result, interpreter


def conv_plugins(conv: dict[str, Any]) -> list[str]:
    """The lagent tools (toolkits by their name) of a recorded conversation."""
    return list(dict.fromkeys(p["name"].split(".")[0] for p in conv["plugins"]))


# ------------------------------------------------------------------ the texts
def test_lagent_texts_are_the_recorded_ones() -> None:
    texts = RECORD["texts"]
    assert RECORD["lagent"] == "0.2.4"
    for name, value in texts.items():
        assert getattr(lagent_texts, f"LAGENT_0_2_4_{name}") == value


def test_seed_texts_differ_from_lagent_0_2_4() -> None:
    """The SEED_* texts are the seed's printout of an older lagent, not 0.2.4's (issue 22)."""
    from chatfmt.families.internlm import templates

    texts = RECORD["texts"]
    assert templates.SEED_META_INS.endswith(texts["META_CN"]) and (
        texts["META_CN"] != templates.SEED_META_INS
    )
    assert texts["INTERPRETER_CN"] != templates.SEED_INTERPRETER_CN
    assert "<|action_start|><|plugin|>" in templates.SEED_PLUGIN_CN
    assert "<|action_start|>" not in texts["PLUGIN_CN"]
    assert texts["API_PREFIX"].endswith("is: \n{description}")
    assert templates.SEED_API_PREFIX.endswith("is:\n{description}")
    with pytest.warns(DeprecationWarning, match="SEED_PLUGIN_CN"):
        assert templates.LAGENT_PLUGIN_CN == templates.SEED_PLUGIN_CN  # the old name


# ------------------------------------------------------------------ prompts
@pytest.mark.parametrize("name", ["plain", "plugin", "toolkit", "interpreter", "both"])
def test_agent_prompts_are_lagents(name: str) -> None:
    conv = CONVERSATIONS[name]
    prompts, result, interpreter = _chatfmt_prompts(conv)
    assert prompts == [c["prompt"] for c in conv["calls"]]
    assert result.answer == conv["response"]
    if conv["interpreter"] and len(conv["calls"]) > 1:
        assert interpreter.ran == ["print(1 + 1)"]


def test_a_compact_call_stays_as_the_model_wrote_it() -> None:
    """lagent re-serializes the call; chatfmt keeps the model's bytes (issue 22 item 2)."""
    conv = CONVERSATIONS["plugin_compact"]
    prompts, _, _ = _chatfmt_prompts(conv)
    written = '{"name":"Weather","parameters":{"location":"Paris"}}'
    lagents = json.dumps({"name": "Weather", "parameters": {"location": "Paris"}})
    assert written in conv["calls"][0]["output"] and lagents in conv["calls"][1]["prompt"]
    assert prompts[0] == conv["calls"][0]["prompt"]
    assert prompts[1] == conv["calls"][1]["prompt"].replace(lagents, written)


def test_an_image_a_tool_returns_is_a_markdown_image() -> None:
    conv = CONVERSATIONS["image_result"]
    prompts, result, _ = _chatfmt_prompts(conv)
    assert "\n[image](/tmp/plot.png)\nplotted sales<|im_end|>" in conv["calls"][1]["prompt"]
    assert prompts[0] == conv["calls"][0]["prompt"]
    assert prompts[1] == conv["calls"][1]["prompt"].replace(
        "[image](/tmp/plot.png)", "![image](/tmp/plot.png)"
    )
    (observation,) = result.steps[0].observations
    assert observation.images == (Path("/tmp/plot.png"),)


# ------------------------------------------------------------------ parses
@pytest.mark.parametrize("case", RECORD["parses"], ids=lambda c: c["output"][:20])
def test_parses_are_lagents(case: dict[str, Any]) -> None:
    kind, language, action = case["parse"]
    msg = chatfmt.parse(case["output"], "internlm2")
    assert (msg.content or "") == language
    if kind is None:
        assert not msg.tool_calls
        return
    (call,) = msg.tool_calls
    if kind == "plugin":
        assert json.loads(action) == {
            "name": call.name,
            "parameters": json.loads(call.arguments),
        }
    else:
        assert call.code and f"```python\n{call.arguments}\n```" == action["parameters"]["command"]
