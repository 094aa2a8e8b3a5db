"""Record lagent 0.2.4's InternLM2 agent for the parity tests (tests/peers/test_lagent_parity.py).

lagent is not a dependency of chatfmt or of its tests: this script runs lagent 0.2.4's own
``Internlm2Protocol`` and ``Internlm2Agent`` on a few conversations, with lagent's own
``BaseAction`` / ``@tool_api`` tools and scripted model outputs, and writes what lagent
did (every prompt it sent, every parse it made, the tool descriptions, its prompt texts)
to ``lagent_0.2.4.json`` next to this file. The tests compare chatfmt against that file.

Re-record (Python 3.10/3.11; lagent's own requirements pull in far more than it imports):

    python -m venv --system-site-packages /tmp/lagenv
    /tmp/lagenv/bin/pip install --no-deps lagent==0.2.4
    /tmp/lagenv/bin/pip install "phx-class-registry==4.1.0" "griffe<1.0" termcolor \
        jsonschema requests beautifulsoup4 cachetools filelock timeout-decorator \
        duckduckgo-search
    /tmp/lagenv/bin/python tests/data/lagent/record.py

That set is what ``import lagent.agents.internlm2_agent`` and ``import lagent.actions``
need (phx-class-registry must be 4.1.0, the version lagent pins: 5.x has no
``AutoRegister``; griffe must be < 1.0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lagent
from lagent.actions import ActionExecutor, BaseAction, tool_api
from lagent.actions.parser import JsonParser
from lagent.agents import internlm2_agent
from lagent.agents.internlm2_agent import Internlm2Agent, Internlm2Protocol
from lagent.llms.base_llm import BaseModel
from lagent.llms.meta_template import INTERNLM2_META
from lagent.schema import ActionReturn

OUT = Path(__file__).with_name("lagent_0.2.4.json")


# ---------------------------------------------------------------------- lagent tools
class Weather(BaseAction):
    """A single-API tool (lagent calls its API ``run``)."""

    @tool_api
    def run(self, location: str, unit: str = "celsius") -> dict:
        """Get the current weather in a city.

        Args:
            location (str): the city, e.g. Paris
            unit (str): celsius or fahrenheit

        Returns:
            dict: the weather
        """
        return {"location": location, "temperature": 21, "unit": unit}


class Calculator(BaseAction):
    """A toolkit: its APIs are named ``Calculator.add`` and ``Calculator.mul``."""

    @tool_api
    def add(self, a: int, b: int) -> int:
        """Add two integers.

        Args:
            a (int): augend
            b (int): addend

        Returns:
            int: the sum
        """
        return a + b

    @tool_api
    def mul(self, a: int, b: int) -> int:
        """Multiply two integers.

        Args:
            a (int): multiplicand
            b (int): multiplier

        Returns:
            int: the product
        """
        return a * b


class Plotter(BaseAction):
    """A tool that returns an image and a text (a plugin result with an image)."""

    @tool_api
    def run(self, title: str) -> ActionReturn:
        """Plot a chart and return its image.

        Args:
            title (str): the chart title

        Returns:
            ActionReturn: the image
        """
        return ActionReturn(
            result=[
                {"type": "image", "content": "/tmp/plot.png"},
                {"type": "text", "content": f"plotted {title}"},
            ]
        )


class ScriptedInterpreter(BaseAction):
    """A stand-in for lagent's IPythonInterpreter (same API shape, no kernel)."""

    @tool_api
    def run(self, command: str) -> str:
        """Run Python code in a Jupyter notebook and return what it prints.

        Args:
            command (str): Python code

        Returns:
            str: the output
        """
        return "2"


# ---------------------------------------------------------------------- a scripted model
class ScriptedModel(BaseModel):
    """lagent's BaseModel with the InternLM2 meta template; ``generate`` replays outputs and
    records each prompt string it was given."""

    def __init__(self, outputs: list[str]) -> None:
        super().__init__(path="scripted", meta_template=INTERNLM2_META)
        self.outputs = list(outputs)
        self.calls: list[dict[str, Any]] = []

    def chat(self, inputs: Any, **gen_params: Any) -> Any:
        self.last_messages = inputs
        return super().chat(inputs, **gen_params)

    def generate(self, inputs: Any, **gen_params: Any) -> str:
        output = self.outputs.pop(0)
        self.calls.append({"messages": self.last_messages, "prompt": inputs, "output": output})
        return output


# ---------------------------------------------------------------------- conversations
WEATHER = (
    'I will check the weather.<|action_start|><|plugin|>\n{"name": "Weather", '
    '"parameters": {"location": "Paris"}}<|action_end|>\n'
)
CONVERSATIONS: list[dict[str, Any]] = [
    {
        "name": "plain",
        "message": "Hello!",
        "plugins": [],
        "interpreter": False,
        "outputs": ["Hello! How can I help you today?"],
    },
    {
        "name": "plugin",
        "message": "What is the weather in Paris?",
        "plugins": ["Weather", "Calculator"],
        "interpreter": False,
        "outputs": [WEATHER, "It is 21 °C in Paris."],
    },
    {
        "name": "plugin_compact",
        "message": "What is the weather in Paris?",
        "plugins": ["Weather"],
        "interpreter": False,
        "outputs": [
            'Let me check.<|action_start|><|plugin|>\n{"name":"Weather","parameters":'
            '{"location":"Paris"}}<|action_end|>',
            "It is 21 °C in Paris.",
        ],
    },
    {
        "name": "toolkit",
        "message": "What is 2 + 3?",
        "plugins": ["Weather", "Calculator"],
        "interpreter": False,
        "outputs": [
            '<|action_start|><|plugin|>\n{"name": "Calculator.add", "parameters": '
            '{"a": 2, "b": 3}}<|action_end|>\n',
            "2 + 3 = 5.",
        ],
    },
    {
        "name": "interpreter",
        "message": "Compute 1 + 1 with Python.",
        "plugins": [],
        "interpreter": True,
        "outputs": [
            "I will compute it.<|action_start|><|interpreter|>\n```python\nprint(1 + 1)\n"
            "```<|action_end|>\n",
            "1 + 1 = 2.",
        ],
    },
    {
        "name": "both",
        "message": "Weather in Paris, then 1 + 1 in Python.",
        "plugins": ["Weather"],
        "interpreter": True,
        "outputs": [
            WEATHER,
            "Now the sum.<|action_start|><|interpreter|>\n```python\nprint(1 + 1)\n"
            "```<|action_end|>\n",
            "21 °C in Paris, and 1 + 1 = 2.",
        ],
    },
    {
        "name": "image_result",
        "message": "Plot sales.",
        "plugins": ["Plotter"],
        "interpreter": False,
        "outputs": [
            '<|action_start|><|plugin|>\n{"name": "Plotter", "parameters": '
            '{"title": "sales"}}<|action_end|>\n',
            "Here is the chart.",
        ],
    },
]
TOOLS = {"Weather": Weather, "Calculator": Calculator, "Plotter": Plotter}

#: Model outputs parsed by Internlm2Protocol.parse alone (no tool run).
PARSES = [
    WEATHER,
    'Let me check.<|action_start|><|plugin|>\n{"name":"Weather","parameters":'
    '{"location":"Paris"}}<|action_end|>',
    "I will compute it.<|action_start|><|interpreter|>\n```python\nprint(1)\n```<|action_end|>\n",
    "Just text.",
]


def run(conv: dict[str, Any]) -> dict[str, Any]:
    """Run one conversation through Internlm2Agent.chat and record every model call."""
    model = ScriptedModel(conv["outputs"])
    plugins = ActionExecutor([TOOLS[n]() for n in conv["plugins"]]) if conv["plugins"] else None
    interpreter = ActionExecutor([ScriptedInterpreter()]) if conv["interpreter"] else None
    agent = Internlm2Agent(
        model,
        plugin_executor=plugins,
        interpreter_executor=interpreter,
        protocol=Internlm2Protocol(),
        max_turn=4,
    )
    result = agent.chat(conv["message"])
    return {
        "name": conv["name"],
        "message": conv["message"],
        "plugins": plugins.get_actions_info() if plugins else [],
        "interpreter": interpreter.get_actions_info() if interpreter else [],
        "calls": model.calls,
        "response": result.response,
        "inner_steps": result.inner_steps,
    }


def main() -> None:
    protocol = Internlm2Protocol()
    record = {
        "lagent": lagent.__version__,
        "texts": {
            "META_CN": internlm2_agent.META_CN,
            "INTERPRETER_CN": internlm2_agent.INTERPRETER_CN,
            "PLUGIN_CN": internlm2_agent.PLUGIN_CN,
            "API_PREFIX": internlm2_agent.API_PREFIX,
            "PARAMETER_DESCRIPTION": JsonParser.PARAMETER_DESCRIPTION,
        },
        "conversations": [run(c) for c in CONVERSATIONS],
        "parses": [
            {"output": out, "parse": list(protocol.parse(out, None, None))} for out in PARSES
        ],
    }
    OUT.write_text(json.dumps(record, ensure_ascii=False, indent=1, default=str) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
