"""The ``hermes`` tool format, for templates without one of their own (see :mod:`chatfmt.tool_format`).

Written as Qwen2.5 writes it (the common Hermes-style form): the tools as JSON lines inside
``<tools></tools>`` in the system message, each call as
``<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`` after the reply's text, and
consecutive tool results as ``<tool_response>`` blocks of one user message.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...protocol import Message, Tool
from ...tool_format import Pieces, ToolFormat
from ..chatml.render import function_call, require_text
from .markers import (
    HERMES_FORMAT,
    TOOL_CALL,
    TOOL_CALL_CLOSE,
    TOOL_RESPONSE,
    TOOL_RESPONSE_CLOSE,
    TOOLS_INTRO,
    TOOLS_OUTRO,
)
from .parser import HermesParser


def tools_section(tools: Sequence[Tool]) -> Pieces:
    """``# Tools`` … ``<tools>`` one JSON line per tool ``</tools>`` … (the call syntax)."""
    out: Pieces = [(TOOLS_INTRO, True)]
    for tool in tools:
        out += [("\n", True), (tool.json, False)]
    out.append((TOOLS_OUTRO, True))
    return out


def calls_text(template: str, m: Message) -> Pieces:
    """The message's calls, one ``<tool_call>`` block each, separated by a newline."""
    out: Pieces = []
    for j, call in enumerate(m.tool_calls):
        call = function_call(template, m, call, j)  # code-interpreter calls have no form here
        out += [
            (("\n" if j else "") + TOOL_CALL + '\n{"name": "', True),
            (call.name, False),
            ('", "arguments": ', True),
            (call.arguments_json, False),
            ("}\n" + TOOL_CALL_CLOSE, True),
        ]
    return out


def result_text(template: str, m: Message) -> Pieces:
    """One tool result as a ``<tool_response>`` block (consecutive ones go in one user turn)."""
    return [
        (TOOL_RESPONSE, True),
        (require_text(template, m), False),
        (TOOL_RESPONSE_CLOSE, True),
    ]


HERMES = ToolFormat(
    name="hermes",
    description=(
        "Hermes/Qwen2.5 style: tools as JSON in <tools></tools> in the system message, calls as "
        '<tool_call>{"name": …, "arguments": …}</tool_call>, results as <tool_response> blocks '
        "in a user turn"
    ),
    call_format=HERMES_FORMAT,
    parser=HermesParser,
    tools_section=tools_section,
    calls=calls_text,
    result=result_text,
)
