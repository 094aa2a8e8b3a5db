""":func:`check_reply`: what is wrong with a parsed assistant message, for a request's tools,
``tool_choice`` and ``response_format`` (validated with the jsonschema library)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .schemas import offered_tools, response_schema


@dataclass(frozen=True)
class ReplyProblem:
    """One thing wrong with a reply: ``where`` (``tool_calls[0].function.arguments``,
    ``content``, ``tool_calls``) and ``what``."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def check_reply(
    message: Mapping[str, Any],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: Any = "auto",
    response_format: Mapping[str, Any] | None = None,
) -> list[ReplyProblem]:
    """The problems of ``message`` (a parsed assistant message: :class:`~chatfmt.parsing.ParsedMessage`
    or an OpenAI message dict); ``[]`` when it is valid.

    Checked: each call names an offered tool, its arguments are a JSON object valid against that
    tool's schema, a call the parser flagged (``error``) is reported, ``required`` / named
    choices are answered with (only) the right calls, ``none`` with no call, and content asked
    for by ``response_format`` is JSON valid against its schema. A malformed schema in the
    request raises :class:`~chatfmt.errors.ValidationError` naming it.
    """
    import jsonschema

    offered = {t.name: t for t in offered_tools(tools or ())}
    schema = response_schema(response_format)
    calls = list(message.get("tool_calls") or ())
    problems: list[ReplyProblem] = []
    named = None
    if isinstance(tool_choice, Mapping):
        named = (tool_choice.get("function") or {}).get("name")
    for i, call in enumerate(calls):
        found = _call_problems(call, f"tool_calls[{i}]", offered, named, jsonschema)
        if not found and call.get("error"):  # what the parser saw that the checks above did not
            found = [
                ReplyProblem(f"tool_calls[{i}]", f"the call could not be read: {call['error']}")
            ]
        problems += found
    if tool_choice == "none" and calls:
        problems.append(ReplyProblem("tool_calls", 'tool_choice "none" forbids calls'))
    if (tool_choice == "required" or named is not None) and not calls:
        what = "a call" if named is None else f"a call of {named!r}"
        problems.append(
            ReplyProblem(
                "tool_calls", f"tool_choice asks for {what}; the reply has none (text only)"
            )
        )
    if schema is not None and not calls:
        content = message.get("content")
        try:
            value = json.loads(content) if isinstance(content, str) else None
        except ValueError as exc:
            problems.append(
                ReplyProblem(
                    "content", f"not valid JSON ({exc}) though response_format asks for JSON"
                )
            )
        else:
            if value is None and not isinstance(content, str):
                problems.append(
                    ReplyProblem("content", "empty, though response_format asks for JSON")
                )
            else:
                problems += _against(value, schema, "content", jsonschema)
    return problems


def _call_problems(
    call: Mapping[str, Any], where: str, offered: Mapping[str, Any], named: Any, jsonschema: Any
) -> list[ReplyProblem]:
    function = call.get("function") or {}
    name = function.get("name")
    if name not in offered:
        known = ", ".join(offered) or "none"
        what = f"{name!r} is not an offered tool (offered: {known})"
        return [ReplyProblem(f"{where}.function.name", what)]
    found = []
    if named is not None and name != named:
        what = f"tool_choice asks for {named!r}, the reply calls {name!r}"
        found.append(ReplyProblem(f"{where}.function.name", what))
    raw = function.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        return [*found, ReplyProblem(f"{where}.function.arguments", f"not valid JSON: {exc}")]
    if not isinstance(args, Mapping):
        return [*found, ReplyProblem(f"{where}.function.arguments", f"not a JSON object: {raw!r}")]
    return found + _against(
        args, offered[str(name)].parameters, f"{where}.function.arguments", jsonschema
    )


def _against(
    value: Any, schema: Mapping[str, Any], where: str, jsonschema: Any
) -> list[ReplyProblem]:
    validator = jsonschema.validators.validator_for(schema)(schema)
    found = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.path)):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
        found.append(ReplyProblem(where + path, error.message))
    return found
