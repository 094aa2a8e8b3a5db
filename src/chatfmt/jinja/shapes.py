"""Input shapes: the features of a call that a template may treat specially.

A recognized native template renders a call only when recognition probed every
shape the call uses and found the native template and the Jinja source to agree
on them (see :mod:`chatfmt.jinja.recognize`). Probes and calls are classified by
the same function, :func:`shapes_of`, so what was probed and what is routed
cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..protocol import ROLE_ALIASES, Conversation, Message
from .inputs import _raw_message

#: ``content`` is a list (text parts) instead of a string.
PARTS = "text parts"
#: ``content`` is ``None`` or missing on a message without tool calls.
NULL_CONTENT = "null content"
#: ``tools`` is a non-empty list.
TOOLS = "tools"
#: ``tools`` is an empty list (templates that test ``tools is not none`` render a tools section).
EMPTY_TOOLS = "empty tools"
#: assistant ``tool_calls`` or ``tool`` result messages.
TOOL_CALLS = "tool calls"
#: ``reasoning_content`` (or ``reasoning``/``thinking``), or think tags inside an assistant reply.
REASONING = "reasoning"
#: more than one system message, or a system message that is not the first message.
SYSTEM_PLACEMENT = "system placement"
#: a message with a ``name``.
NAMES = "names"
#: a role other than the four canonical ones (an alias such as ``developer``, or a custom role).
OTHER_ROLES = "other roles"

#: Prefix of the shape "this template option is given", e.g. ``option:enable_thinking``.
OPTION = "option:"

_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
_CANONICAL = frozenset(("system", "user", "assistant", "tool"))


def _fields(m: Any, pos: int) -> tuple[Any, Any, Any, bool, bool, bool]:
    """(role, content, tool_calls, has content key, has reasoning, has name) of one message."""
    if isinstance(m, Message):
        return (
            m.role,  # a validated message reaches a Jinja template under its canonical role
            m.content,
            m.tool_calls,
            True,
            m.reasoning_content is not None,
            m.name is not None,
        )
    if not isinstance(m, Mapping):
        m = _raw_message(m, pos)
    return (
        m.get("role"),
        m.get("content"),
        m.get("tool_calls"),
        "content" in m,
        any(m.get(k) is not None for k in _REASONING_KEYS),
        m.get("name") is not None,
    )


def shapes_of(messages: Any, tools: Any = None, options: Sequence[str] = ()) -> frozenset[str]:
    """The shapes a call uses (``options``: the names of the template options it sets)."""
    found = {OPTION + name for name in options} if options else set()
    if tools is not None:
        found.add(TOOLS if tools else EMPTY_TOOLS)
    if type(messages) is not list:
        if isinstance(messages, Conversation):
            if tools is None and messages.tools:
                found.add(TOOLS)
            messages = messages.messages
        elif isinstance(messages, str) or not isinstance(messages, Sequence):
            return frozenset(found)
    system_seen = False
    for pos, m in enumerate(messages):
        if type(m) is dict and len(m) == 2:
            # the common {"role": ..., "content": "..."} message
            role = m.get("role")
            content = m.get("content")
            if type(content) is str and type(role) is str and role in _CANONICAL:
                if role == "system":
                    if pos or system_seen:
                        found.add(SYSTEM_PLACEMENT)
                    system_seen = True
                elif role == "assistant" and "think>" in content:
                    found.add(REASONING)
                elif role == "tool":
                    found.add(TOOL_CALLS)
                continue
        role, content, calls, has_content, reasoning, name = _fields(m, pos)
        canonical = ROLE_ALIASES.get(role) if isinstance(role, str) else None
        if canonical is None or role != canonical:
            found.add(OTHER_ROLES)
        if canonical == "system":
            if pos or system_seen:
                found.add(SYSTEM_PLACEMENT)
            system_seen = True
        elif canonical == "tool":
            found.add(TOOL_CALLS)
        if calls:
            found.add(TOOL_CALLS)
        if isinstance(content, str):
            if canonical == "assistant" and "think>" in content:
                found.add(REASONING)
        elif content is not None:
            found.add(PARTS)
        elif not calls or not has_content:
            found.add(NULL_CONTENT)
        if reasoning:
            found.add(REASONING)
        if name:
            found.add(NAMES)
    return frozenset(found)
