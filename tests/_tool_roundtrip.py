"""Does a reference template parse its own rendered tool calls? (shared by a test and the docs table)

For a template: render a question with the generation prompt, then the question plus an
assistant turn with two tool calls; the model's output is what the second render adds
after the longest common prefix of the two (where the prompt opened ``<think>`` and the
rendered turn writes ``</think>`` instead, the output starts there, as a model given
that prompt would write it). The template *renders tool calls* when that output holds
the calls' names and argument values (a turn that drops the reasoning block its prompt
opened is written after that block's close marker, as the model writes it, e.g.
DeepSeek-R1 distills); it *parses its own calls* when
``chatfmt.parse(output, template)`` — and the stream parser at a few chunkings — gives
the same calls back (names, arguments as JSON).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import chatfmt
from _streaming import streamed
from chatfmt.errors import ChatFmtError
from chatfmt.parsing import REASONING_PARSERS
from chatfmt.template import Template


def _tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    for key, schema in properties.items():
        schema["description"] = f"The {key}"
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool",
            "parameters": {"type": "object", "properties": properties, "required": [*properties]},
        },
    }


TOOLS = [
    _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}),
    _tool("search_web", {"query": {"type": "string"}, "limit": {"type": "integer"}}),
]
#: The calls of the probe turn: (name, arguments); the string values occur nowhere else.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_weather", {"city": "Quito", "days": 3}),
    ("search_web", {"query": "Andes rainfall", "limit": 5}),
]
HISTORY = [{"role": "user", "content": "What is the weather like?"}]


def turn(n: int, content: str | None = None) -> dict[str, Any]:
    """An assistant turn with the first ``n`` of :data:`CALLS`."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": f"call0000{i}",  # 9 alphanumerics: valid for Mistral too
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(CALLS[:n])
        ],
    }


@dataclass(frozen=True)
class RoundTrip:
    """One template's result: ``output`` is None when it renders no tool calls."""

    template: Template
    output: str | None
    #: the calls ``output`` holds (both of :data:`CALLS`, or the first where one turn holds one)
    calls: list[tuple[str, dict[str, Any]]]
    #: why its own calls do not parse back (None: they do)
    failure: str | None

    @property
    def renders_calls(self) -> bool:
        return self.output is not None

    @property
    def parses_own_calls(self) -> bool:
        return self.output is not None and self.failure is None


#: After these characters a marker may start: the output of a prompt that is not a prefix of the
#: rendered turn starts after the last of them they share (``<think>`` vs ``</think>``).
_BOUNDARY = frozenset(">]\n ")


def continuation(prompt: str, full: str) -> str:
    """What ``full`` adds to ``prompt`` (from the last marker boundary they share, if it is not a prefix)."""
    common = 0
    for a, b in zip(prompt, full, strict=False):
        if a != b:
            break
        common += 1
    if common < len(prompt):
        while common and full[common - 1] not in _BOUNDARY:
            common -= 1
    return full[common:]


def _closer(opener: str) -> str | None:
    """The close marker of the registered reasoning parser opened by ``opener``."""
    for cls in REASONING_PARSERS.values():
        if opener and getattr(cls, "open_marker", None) == opener:
            return str(cls.close_marker)
    return None


def model_output(tpl: Template, n: int) -> str | None:
    """What a model prompted by ``tpl`` writes for ``turn(n)`` (None: the calls are not rendered)."""
    prompt = full = None
    for content in (None, ""):  # some formats need string content next to calls
        try:
            prompt = tpl.render(HISTORY, add_generation_prompt=True, tools=TOOLS)
            full = tpl.render(
                [*HISTORY, turn(n, content)], add_generation_prompt=False, tools=TOOLS
            )
            break
        except ChatFmtError:
            continue  # the format refuses these tool calls
    if prompt is None or full is None:
        return None
    output = continuation(prompt, full)
    opened = prompt[len(full) - len(output) :].strip()  # what the prompt has and the turn not
    closer = _closer(opened)
    if closer and closer not in output:  # the turn drops a reasoning block the prompt opened:
        output = closer + output  # the model closes its reasoning, then writes the turn
    values = [name for name, _ in CALLS[:n]]
    values += [str(v) for _, args in CALLS[:n] for v in args.values() if isinstance(v, str)]
    return output if all(v in output for v in values) else None


def _calls(msg: dict[str, Any]) -> list[tuple[str, Any]]:
    got = []
    for call in msg.get("tool_calls") or ():
        fn = call.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "")
        except ValueError:
            args = fn.get("arguments")
        got.append((fn.get("name"), args))
    return got


def check(tpl: Template, output: str, want: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Why ``output`` does not parse back to the calls ``want`` with ``tpl`` (None: it does)."""
    try:
        whole = chatfmt.parse(output, tpl, tools=TOOLS, id_factory=lambda i: f"c{i}")
    except ChatFmtError as exc:
        return f"parse raises {type(exc).__name__}: {exc}"
    if _calls(whole) != want:
        return f"parses to {_calls(whole)!r}"
    rnd = random.Random(output)
    cuts = sorted(rnd.sample(range(1, len(output)), min(len(output) - 1, 6)))
    for chunks in (
        [output[i : i + 1] for i in range(len(output))],
        [output[i : i + 4] for i in range(0, len(output), 4)],
        [output[a:b] for a, b in zip([0, *cuts], [*cuts, len(output)], strict=True)],
    ):
        got = streamed(chunks, tpl, tools=TOOLS, id_factory=lambda i: f"c{i}")
        if got != whole:
            return f"streamed in {len(chunks)} chunks differs from the whole parse: {got!r}"
    return None


def round_trip(tpl: Template) -> RoundTrip:
    """Whether ``tpl`` renders tool calls and parses them back."""
    for n in (len(CALLS), 1):  # some formats hold one call per turn
        output = model_output(tpl, n)
        if output is not None:
            return RoundTrip(tpl, output, CALLS[:n], check(tpl, output, CALLS[:n]))
    return RoundTrip(tpl, None, [], None)


@cache
def reference_round_trips(folder: Path) -> dict[str, RoundTrip]:
    """:func:`round_trip` of every ``*.jinja`` file in ``folder`` (resolved by ``get_template``)."""
    return {
        path.name: round_trip(chatfmt.get_template(path)) for path in sorted(folder.glob("*.jinja"))
    }
