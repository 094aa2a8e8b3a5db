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
first, a call the parser cannot read) is refused with a clear error. The same render gives
what closes the name (:func:`name_close`: the text between the name and the arguments,
``", "arguments": `` for Hermes), so a named choice prefills the whole head of the call and
the model cannot extend the name.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..constraints.memo import per_template
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
_PROBE_ID = "a1b2c3d4e"  # 9 alphanumerics: valid for Mistral's ids too
_PROBE_CALL = {
    "id": _PROBE_ID,
    "type": "function",
    "function": {"name": _PROBE_NAME, "arguments": json.dumps({_PROBE_ARG: 7})},
}


@dataclass(frozen=True)
class CallParts:
    """One probe call as ``template`` writes it after its generation prompt, cut at the name
    and the arguments: ``opening NAME name_close ARGS after_args``."""

    #: Text before the name (``<tool_call>\n{"name": "``).
    opening: str
    #: Text between the name and the arguments (``", "arguments": ``; a call id the template
    #: writes there is left out, with what follows it).
    name_close: str
    #: The rest of the turn after the arguments object (``}\n</tool_call><|im_end|>…``);
    #: ``""`` where the arguments are not one JSON object.
    after_args: str
    #: Whether the generation prompt starts the rendered call turn (else it opens a reasoning
    #: block the rendered history drops, and the opening cannot follow it as a prefill).
    follows_prompt: bool = True


#: Call parts (or the reason there are none) per template object, then per options.
_PARTS: weakref.WeakKeyDictionary[Template, dict[str, Any]] = weakref.WeakKeyDictionary()


def call_parts(template: Template, options: Mapping[str, Any]) -> CallParts:
    """How ``template`` writes a call after its generation prompt (see :class:`CallParts`).

    Raises :class:`ChatFmtError` saying why when the template has no opening that works.
    """
    key = json.dumps(dict(options), sort_keys=True, default=repr)
    return per_template(_PARTS, template, key, lambda: _find_parts(template, options))


def call_opening(template: Template, options: Mapping[str, Any]) -> str:
    """The text a tool call starts with after ``template``'s generation prompt (may be blank).

    Raises :class:`ChatFmtError` saying why when the template has none that works.
    """
    return call_parts(template, options).opening


def name_close(template: Template, options: Mapping[str, Any]) -> str:
    """The text ``template`` writes between a call's name and its arguments (what closes the
    name: ``", "arguments": `` for Hermes, ``[ARGS]`` for Mistral v11, ``>\n`` for
    Qwen3-Coder)."""
    return call_parts(template, options).name_close


def _find_parts(template: Template, options: Mapping[str, Any]) -> CallParts:
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
    from ..parsing.derived_probe import _shared_head

    turn = whole[_shared_head(head, whole) :]  # after a reasoning opener the call turn drops
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
    rest = turn[at + len(_PROBE_NAME) :]
    key = rest.find(_PROBE_ARG)
    between, after = rest[:key], ""
    # the arguments start before the probe argument's key: ``{"`` (JSON), ``<parameter=`` …
    cut = max(between.rfind('{"'), between.rfind("{'"))
    if cut >= 0:
        between = between[:cut]
        after = rest[rest.find("7", key) + 1 :].lstrip()
        after = after[1:] if after.startswith("}") else ""
    else:
        between = _KEY_OPENING.sub("", between)
    if _PROBE_ID in between:  # a call id is the model's to write
        between = between[: between.find(_PROBE_ID)]
    return CallParts(opening, between, after, whole.startswith(head))


#: Markup opening an argument's key at the end of the text after a name (``<parameter=``,
#: ``<arg_key>``).
_KEY_OPENING = re.compile(r"<[^<>\n]*[>=]$")


def prefill_for(template: Template, options: Mapping[str, Any], choice: Any) -> str:
    """What the prompt is extended with for ``tool_choice`` (``""`` for ``auto``/``none``).

    ``required`` → the call opening; ``{"type": "function", "function": {"name": N}}`` →
    the opening, ``N`` and what closes the name (:func:`name_close`), so the model writes the
    arguments next and cannot extend the name.
    """
    if choice in (None, "auto", "none"):
        return ""
    return prefill_of(template, call_parts(template, options), choice, after_prompt=True)


def prefill_of(template: Template, parts: CallParts, choice: Any, *, after_prompt: bool) -> str:
    """The prefill for ``required`` / a named ``choice`` from ``template``'s call ``parts``.

    ``after_prompt``: refuse a template whose generation prompt opens a reasoning block its
    calls drop (the prefill would land inside the reasoning)."""
    if after_prompt and not parts.follows_prompt:
        raise ChatFmtError(
            f"template {template.name!r} cannot be made to call a tool by a prefill: its "
            "generation prompt ends with text its rendered calls do not continue (e.g. an "
            "opened reasoning block)"
        )
    if choice == "required":
        if not parts.opening.strip():  # ChatGLM3, GLM-4: a call is its name; nothing forces one
            raise ChatFmtError(
                f"template {template.name!r} cannot be made to call some tool "
                "(its calls have no opening marker to prefill); name the function instead"
            )
        return parts.opening
    return parts.opening + choice["function"]["name"] + parts.name_close
