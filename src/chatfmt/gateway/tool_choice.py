"""``tool_choice`` over a plain completions backend: prefill the template's tool-call opening.

A completions engine cannot be told to call a tool, but the prompt can already hold the
start of a call: the template's tool-call opening (``<tool_call>\\n{"name": "`` for
Hermes/Qwen, ``[TOOL_CALLS][{"name": "`` for Mistral, ``{"name": "`` for Llama 3.1 JSON,
…) after the generation prompt, and for a named function the name too. The model
continues the call; the parser reads prefill + continuation.

The opening is found per template, not per family: render a probe conversation whose
last assistant turn is one call of a probe tool, take the text between the generation
prompt and the probe's name, and check that the template's own parser reads the probe
turn back as that call. A template where this fails (no tool format, the name not
first, a call the parser cannot read) is refused with a clear error.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping
from typing import Any

from ..errors import ChatFmtError
from ..parsing import parse
from ..template import Template
from ..tool_format import tool_format_hint

_PROBE_NAME = "chatfmt_probe_function"
_PROBE_ARG = "chatfmt_probe_argument"
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": _PROBE_NAME,
        "description": "A probe.",
        "parameters": {
            "type": "object",
            "properties": {_PROBE_ARG: {"type": "integer", "description": "A number."}},
        },
    },
}
_PROBE_CALL = {
    "id": "a1b2c3d4e",  # 9 alphanumerics: valid for Mistral's ids too
    "type": "function",
    "function": {"name": _PROBE_NAME, "arguments": json.dumps({_PROBE_ARG: 7})},
}

#: Openings (or the reason there is none) per template object, then per options.
_OPENINGS: weakref.WeakKeyDictionary[Template, dict[str, str | ChatFmtError]] = (
    weakref.WeakKeyDictionary()
)


def call_opening(template: Template, options: Mapping[str, Any]) -> str:
    """The text a tool call starts with after ``template``'s generation prompt (may be blank).

    Raises :class:`ChatFmtError` saying why when the template has none that works.
    """
    key = json.dumps(dict(options), sort_keys=True, default=repr)
    try:
        cache = _OPENINGS.setdefault(template, {})
    except TypeError:  # not weakly referenceable: no cache
        cache = {}
    found = cache.get(key)
    if found is None:
        try:
            found = _find_opening(template, options)
        except ChatFmtError as exc:
            found = exc
        cache[key] = found
    if isinstance(found, ChatFmtError):
        raise found
    return found


def _find_opening(template: Template, options: Mapping[str, Any]) -> str:
    refuse = f"template {template.name!r} cannot be made to call a tool"
    if not template.supports_tools:
        raise ChatFmtError(f"{refuse}: it has no tool-call format; {tool_format_hint()}")
    user = {"role": "user", "content": "x"}
    call = {"role": "assistant", "content": "", "tool_calls": [_PROBE_CALL]}
    try:
        head = template.render([user], tools=[_PROBE_TOOL], **options)
        whole = template.render(
            [user, call], tools=[_PROBE_TOOL], add_generation_prompt=False, **options
        )
    except ChatFmtError as exc:
        raise ChatFmtError(f"{refuse}: rendering a probe call failed: {exc}") from None
    if not whole.startswith(head):
        raise ChatFmtError(f"{refuse}: its generation prompt does not start the assistant turn")
    turn = whole[len(head) :]
    at = turn.find(_PROBE_NAME)
    opening = turn[:at]
    if at < 0 or _PROBE_ARG in opening:
        raise ChatFmtError(f"{refuse}: its calls do not start with the function name")
    parsed = parse(turn, template, tools=[_PROBE_TOOL], **options)
    calls = parsed.get("tool_calls") or []
    if (
        len(calls) != 1
        or "error" in calls[0]
        or calls[0].get("function", {}).get("name") != _PROBE_NAME
    ):
        raise ChatFmtError(f"{refuse}: its parser does not read a probe call back")
    return opening


def prefill_for(template: Template, options: Mapping[str, Any], choice: Any) -> str:
    """What the prompt is extended with for ``tool_choice`` (``""`` for ``auto``/``none``).

    ``required`` → the call opening; ``{"type": "function", "function": {"name": N}}`` →
    the opening and ``N``.
    """
    if choice in (None, "auto", "none"):
        return ""
    opening = call_opening(template, options)
    if choice == "required":
        if not opening.strip():  # ChatGLM3, GLM-4: a call is its name; nothing forces one
            raise ChatFmtError(
                f"template {template.name!r} cannot be made to call some tool "
                "(its calls have no opening marker to prefill); name the function instead"
            )
        return opening
    return opening + choice["function"]["name"]
