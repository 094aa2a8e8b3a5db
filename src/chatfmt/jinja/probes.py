"""The probe conversations that recognition renders through a Jinja source and a native template.

Core probes (plain text messages, a leading system message, generation prompt on and
off) decide whether a native template is a candidate at all. Every other probe uses
one or more input shapes (:mod:`chatfmt.jinja.shapes`): text-part lists, null or
missing content, tools (also an empty list), tool calls (arguments as objects and as
JSON text, several calls, consecutive tool results, text beside calls, a call that
ends the conversation), reasoning (earlier and current turns, think tags inside the
reply, beside tool calls), several or late system messages, and names. Option probes
(built per native template) render representative probes with each option of the
native template that the source reads.

Every string is distinctive, so a render that loses part of the input can be told
from one that keeps it (:meth:`Probe.data`). Tool-call ids are nine alphanumerics,
which Mistral templates require.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .shapes import shapes_of

_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
_SEARCH = {
    "type": "function",
    "function": {
        "name": "search_web",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


@dataclass(frozen=True)
class Probe:
    """One probe conversation (``options``: template options given with it)."""

    name: str
    messages: tuple[Mapping[str, Any], ...]
    add_generation_prompt: bool = True
    tools: tuple[Mapping[str, Any], ...] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def shapes(self) -> frozenset[str]:
        """The input shapes this probe uses (as :func:`shapes_of` classifies a call)."""
        return shapes_of(self.messages, self.tools, tuple(self.options))

    def data(self) -> list[str]:
        """The strings a render keeps when it loses nothing: texts, reasoning, call names and values."""
        out: list[Any] = []
        for m in self.messages:
            content = m.get("content")
            parts = content if isinstance(content, list) else [content]
            out.extend(p["text"] if isinstance(p, dict) else p for p in parts)
            out.append(m.get("reasoning_content"))
            for call in m.get("tool_calls") or ():
                fn = call["function"]
                args = fn["arguments"]
                args = json.loads(args) if isinstance(args, str) else args
                out.extend([fn["name"], *args.values()])
        return [s.strip() for s in out if isinstance(s, str) and s.strip()]

    def with_options(self, options: Mapping[str, Any]) -> Probe:
        """This probe with template options."""
        suffix = ",".join(f"{k}={v!r}" for k, v in options.items())
        return Probe(
            f"{self.name} [{suffix}]",
            self.messages,
            self.add_generation_prompt,
            self.tools,
            dict(options),
        )

    def arguments(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """Fresh copies of the messages and tools (renders never share the probe's data)."""
        msgs = json.loads(json.dumps(self.messages))
        tools = json.loads(json.dumps(self.tools)) if self.tools is not None else None
        return msgs, tools


def _m(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def _call(name: str, arguments: Any, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


_SYS = _m("system", "You are a probe assistant.")
_U1 = _m("user", "Probe question alpha")
_A1 = _m("assistant", "Probe answer bravo")
_U2 = _m("user", "Probe question charlie")
_PARIS = _call("get_weather", {"city": "Paris hotel"}, "abcDEF123")
_PARIS_TEXT = _call("get_weather", '{"city": "Paris hotel"}', "abcDEF123")
_KILO = _call("search_web", {"query": "kilo lima"}, "ghiJKL456")
_RESULT = _m("tool", "Result india 22", tool_call_id="abcDEF123")
_RESULT2 = _m("tool", "Result mike 7", tool_call_id="ghiJKL456")
_TOOLS = (_WEATHER,)


def _p(name: str, *messages: Mapping[str, Any], gen: bool = True, tools: Any = None) -> Probe:
    return Probe(name, messages, gen, tools)


CORE: tuple[Probe, ...] = (
    _p("user", _U1),
    _p("user, no generation prompt", _U1, gen=False),
    _p("system and turns", _SYS, _U1, _A1, _U2),
    _p("ends with assistant", _U1, _A1, gen=False),
    _p("ends with assistant, generation prompt", _SYS, _U1, _A1),
    _p(
        "whitespace",
        _m("user", "  padded question \n"),
        _m("assistant", "\n answer with spaces  "),
        _m("user", "line one\nline two"),
        _m("assistant", "done"),
        _m("user", "again"),
    ),
    _p("empty reply", _U1, _m("assistant", ""), _U2),
)

SHAPED: tuple[Probe, ...] = (
    _p(
        "text parts",
        _m("user", [{"type": "text", "text": "Part echo"}, {"type": "text", "text": "Part two"}]),
    ),
    _p(
        "text parts everywhere",
        _m("system", [{"type": "text", "text": "Part system foxtrot"}]),
        _U1,
        _m("assistant", [{"type": "text", "text": "Part answer golf"}]),
        _U2,
    ),
    _p("null content", _U1, _m("assistant", None), _U2),
    _p("missing content", _U1, {"role": "assistant"}, _U2),
    _p("tools", _U1, tools=(_WEATHER, _SEARCH)),
    _p("tools and system", _SYS, _U1, tools=_TOOLS),
    _p("empty tools", _U1, tools=()),
    _p(
        "tool call",
        _U1,
        _m("assistant", None, tool_calls=[_PARIS]),
        _RESULT,
        _m("assistant", "Final juliet"),
        _U2,
        tools=_TOOLS,
    ),
    _p(
        "tool call, string arguments",
        _U1,
        _m("assistant", "", tool_calls=[_PARIS_TEXT]),
        _RESULT,
        tools=_TOOLS,
    ),
    _p(
        "several tool calls",
        _SYS,
        _U1,
        _m("assistant", None, tool_calls=[_PARIS, _KILO]),
        _RESULT,
        _RESULT2,
        tools=(_WEATHER, _SEARCH),
    ),
    _p(
        "text beside a tool call",
        _U1,
        _m("assistant", "Let me check november", tool_calls=[_PARIS]),
        _RESULT,
        tools=_TOOLS,
    ),
    _p(
        "tool call ends the conversation",
        _U1,
        _m("assistant", None, tool_calls=[_PARIS]),
        gen=False,
        tools=_TOOLS,
    ),
    _p("tool call without tools", _U1, _m("assistant", None, tool_calls=[_PARIS]), _RESULT),
    _p(
        "tool call without content",
        _U1,
        {"role": "assistant", "tool_calls": [_PARIS]},
        _RESULT,
        tools=_TOOLS,
    ),
    _p(
        "earlier reasoning",
        _U1,
        _m("assistant", "Final oscar", reasoning_content="Thought papa"),
        _U2,
    ),
    _p(
        "current reasoning",
        _U1,
        _m("assistant", "Final oscar", reasoning_content="Thought papa"),
        gen=False,
    ),
    _p(
        "think tags in the current reply",
        _U1,
        _m("assistant", "<think>\nThought quebec\n</think>\n\nFinal romeo"),
        gen=False,
    ),
    _p(
        "think tags in the reply",
        _U1,
        _m("assistant", "<think>\nThought quebec\n</think>\n\nFinal romeo"),
        _U2,
    ),
    _p(
        "reasoning beside a tool call",
        _U1,
        _m("assistant", None, reasoning_content="Thought sierra", tool_calls=[_PARIS]),
        _RESULT,
        tools=_TOOLS,
    ),
    _p("two system messages", _SYS, _m("system", "Second system tango"), _U1),
    _p("late system message", _U1, _A1, _m("system", "Late system uniform"), _U2),
    _p("names", _SYS, _m("user", "Probe question whiskey", name="victor")),
)

#: Probes rendered with each option value: the core of a conversation and one probe per shape.
OPTION_BASES: tuple[Probe, ...] = (
    CORE[2],
    CORE[3],
    *(
        p
        for p in SHAPED
        if p.name
        in {
            "text parts",
            "null content",
            "tools and system",
            "tool call",
            "earlier reasoning",
            "current reasoning",
            "late system message",
            "names",
        }
    ),
)


def option_values(default: Any) -> list[Any]:
    """Values an option is probed with: its default and another value of its type."""
    if isinstance(default, bool):
        return [default, not default]
    if isinstance(default, str):
        return [default, "Probe option value"]
    if default is None:
        return [None, True, False]
    return [default]
