""":func:`compile_constraint`: one request's tools, ``tool_choice`` and ``response_format`` as
a grammar for the template's own tool-call format (see ``docs/constraints.md``)."""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ChatFmtError, ValidationError
from .calls import CallGrammar, Tool
from .format_of import reasoning_state, tool_call_format, writes_indented_json
from .gbnf import WS_RULE, SchemaRules, check_gbnf, jws_rule, lit, prune, seq, until_rules
from .memo import per_template
from .schemas import offered_tools, response_schema
from .structural_tag import structural_tag


@dataclass(frozen=True)
class Constraint:
    """What to constrain a completion with (see ``docs/constraints.md``).

    ``gbnf == ""`` means no grammar: the template's tool format is not described as data (a
    template paired with none), so the constraint is the prefill alone and the reply is
    validated after.
    """

    #: Text the prompt is extended with after the generation prompt (``required``: the call
    #: opening; named: opening + name + what closes the name); ``""`` otherwise.
    prefill: str
    #: llama.cpp GBNF for the continuation after the prefill (checked before it is returned).
    gbnf: str
    #: ``tool_choice="auto"``: the grammar is lazy — free text until ``trigger`` is written, and
    #: ``gbnf``'s root starts with the trigger itself (llama.cpp ``grammar_lazy`` /
    #: ``grammar_triggers``). ``None``: the grammar applies from the first token.
    trigger: str | None
    #: ``response_format``: the schema the content must satisfy (``{"type": "object"}`` for
    #: ``json_object``).
    json_schema: Mapping[str, Any] | None
    #: The tool calls as an xgrammar structural tag (vLLM / SGLang ``structural_tag``), or None.
    structural_tag: Mapping[str, Any] | None
    #: The same constraint for engines without lazy grammars (SGLang ``ebnf``, vLLM
    #: ``structured_outputs.grammar``): equal to ``gbnf`` except for ``auto``, where the free
    #: text before the call is part of it.
    ebnf: str | None


#: Per template object: request key → compiled constraint (or the error it raised).
_CACHE: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def compile_constraint(
    template: Any,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    response_format: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Constraint | None:
    """The constraint for one request on ``template`` (a :class:`~chatfmt.template.Template` or
    a template name).

    ``None`` when there is nothing to constrain (no tools or ``tool_choice="none"``, and no
    ``response_format`` beyond text). Raises :class:`~chatfmt.errors.ValidationError` naming the
    field of a malformed schema or choice (``tools[1].function.parameters``,
    ``response_format.json_schema.schema``, ``tool_choice``) and :class:`ChatFmtError` saying
    how to fix it when the template has no tool-call format. Cached per template object and
    request (a repeat costs a lookup).
    """
    if isinstance(template, str):
        from ..api import get_template

        template = get_template(template)
    opts = dict(options or {})
    key = json.dumps(
        [tools, tool_choice, bool(parallel_tool_calls), response_format, opts],
        sort_keys=True,
        default=repr,
    )
    return per_template(
        _CACHE,
        template,
        key,
        lambda: _compile(
            template, tools or (), tool_choice, bool(parallel_tool_calls), response_format, opts
        ),
    )


def _choice(tool_choice: Any, tools: Sequence[Tool]) -> str | None:
    """``"auto"``, ``"none"``, ``"required"`` or ``None`` for a named choice (checked)."""
    if tool_choice is None:
        return "auto"
    if isinstance(tool_choice, str):
        if tool_choice not in ("auto", "none", "required"):
            raise ValidationError(
                f"unknown tool_choice {tool_choice!r} (auto, none, required or "
                '{"type": "function", "function": {"name": …}})',
                field="tool_choice",
            )
        if tool_choice == "required" and not tools:
            raise ValidationError('tool_choice "required" needs tools', field="tool_choice")
        return tool_choice
    name = _named(tool_choice)
    if name is None:
        raise ValidationError(
            'a named tool_choice is {"type": "function", "function": {"name": …}}',
            field="tool_choice",
        )
    if name not in {t.name for t in tools}:
        raise ValidationError(
            f"tool_choice names {name!r}, which is not among the tools", field="tool_choice"
        )
    return None


def _named(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return str(function["name"])
    return None


def _compile(
    template: Any,
    raw_tools: Sequence[Mapping[str, Any]],
    tool_choice: Any,
    parallel: bool,
    response_format: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> Constraint | None:
    from ..gateway.tool_choice import CallParts, call_parts, prefill_for, prefill_of

    schema = response_schema(response_format)
    tools = offered_tools(raw_tools)
    choice = _choice(tool_choice, tools)
    named = _named(tool_choice) if choice is None else None
    if choice == "none" or not tools:
        tools, choice = [], "none"
    if choice == "none" and schema is None:
        return None
    if tools and not getattr(template, "supports_tools", False):
        from ..tool_format import tool_format_hint

        raise ChatFmtError(
            f"template {getattr(template, 'name', template)!r} has no tool-call format; "
            + tool_format_hint()
        )
    fmt = tool_call_format(template, options) if tools else None
    thinking = reasoning_state(template, options, fmt)
    pretty = fmt is not None and writes_indented_json(template, options)
    schemas = SchemaRules(pretty=pretty) if (fmt is not None or schema is not None) else None
    rules = [WS_RULE, jws_rule(pretty), "call-id ::= [A-Za-z0-9_-]{1,40}"]
    reasoning = ""
    if thinking is not None:
        opener, closer, inside = thinking
        rules += until_rules("think-body", closer)
        body = seq("think-body", lit(closer), "ws")
        reasoning = "reasoning"
        # where the model may open the block itself, it may also write a bare closer
        # (MiniMax-M3's "thinking disabled" prefix)
        rules.append(
            f"reasoning ::= {body}"
            if inside
            else f"reasoning ::= ws ( {seq(lit(opener), body)} | {seq(lit(closer), 'ws')} )?"
        )
    json_rule = (
        schemas.rule(schema, "content", "response_format.json_schema.schema")
        if schemas and schema is not None
        else ""
    )

    if fmt is None:  # no grammar for the calls: prefill (+ JSON when only response_format)
        prefill = prefill_for(template, options, tool_choice) if choice != "none" else ""
        if choice == "none" and schemas is not None:
            gbnf = _finish(rules, schemas, seq(reasoning, json_rule))
            return Constraint("", gbnf, None, schema, None, gbnf)
        if not prefill and schema is None:
            return None
        return Constraint(prefill, "", None, schema, None, None)

    assert schemas is not None
    try:
        parts: CallParts | None = call_parts(template, options)
    except ChatFmtError:
        parts = None  # the grammar writes the whole call; no structural tag
    if parts is not None:  # the prefill ends with the name's close, not a parameter's opening
        parts = replace(parts, name_close=_without_key_opening(parts.name_close, fmt))
    name_close = parts.name_close if parts is not None else ""
    rules[2] = f"call-id ::= {_id_pattern(fmt, name_close)}"
    calls = CallGrammar(fmt, tools, schemas, name_close)
    shape = calls.shape
    rules += calls.rules
    rules.append("any-call ::= " + " | ".join(f"call-{t.index}" for t in tools))
    parallel = parallel and not fmt.one_call
    more = f"( {shape.sep} any-call ){{0,{MAX_CALLS - 1}}}" if parallel else ""
    block = seq(shape.block_begin, "any-call", more, shape.block_end)
    trigger = _trigger(fmt, parts.opening if parts else "")
    # a prefill can only follow the generation prompt directly: not where the model writes a
    # reasoning block first, nor where the prompt ends with text the rendered call does not
    # continue; then the whole call is in the grammar
    prefilled = (
        parts is not None
        and parts.follows_prompt
        and not reasoning
        and "{name}" not in fmt.calls_begin  # the probe's name would be in the prefill
    )
    lead = seq(reasoning or "ws", _response_lead(template, options, fmt))
    tag = None
    prefill = ""
    lazy: str | None = None
    ebnf_root: str | None = None
    if choice == "auto":
        tag = structural_tag(fmt, tools, parts, trigger, at_least_one=False, parallel=parallel)
        if schema is None and trigger is None:
            return None  # nothing to trigger on: calls cannot be constrained lazily
        if trigger is not None:
            rules += until_rules("free", trigger)  # text up to a call (unused rules are pruned)
        if schema is not None:  # either calls or the JSON answer, from the first token
            root = seq(reasoning, f"( {block} | {json_rule} )")
        elif thinking is not None and thinking[2]:
            # the prompt opened the reasoning block: trigger at its end, not on a call marker
            # the model writes while it thinks
            lazy = thinking[1]
            root = seq(lit(lazy), "free", f"( {block} )?")
            ebnf_root = seq(reasoning, "free", f"( {block} )?")
        elif thinking is not None:
            # the model may open a reasoning block itself: a lazy trigger could fire inside
            # it, so the grammar reads the block, then free text, from the first token
            root = seq(reasoning, "free", f"( {block} )?")
        else:
            root, lazy = block, trigger
            ebnf_root = f"free ( {block} )?"
    elif choice == "required":
        tag = structural_tag(fmt, tools, parts, trigger, at_least_one=True, parallel=parallel)
        if prefilled and parts is not None and parts.opening.strip():
            prefill = prefill_of(template, parts, "required", after_prompt=False)
            rest = " | ".join(f"rest-{t.index}" for t in tools)
            root = seq(f"( {rest} )", more, shape.block_end)
        else:
            root = seq(lead, block)
    else:
        (tool,) = [t for t in tools if t.name == named]
        tag = structural_tag(fmt, [tool], parts, trigger, at_least_one=True, parallel=False)
        if prefilled and parts is not None:
            prefill = prefill_of(template, parts, tool_choice, after_prompt=False)
            # what the prefill left of the part between name and arguments (a call id)
            left = ""
            if fmt.id_end and not parts.name_close.rstrip().endswith(fmt.id_end):
                left = seq("call-id", lit(fmt.id_end))
            root = seq(left, f"after-name-{tool.index}", shape.block_end)
        else:
            root = seq(lead, shape.block_begin, f"call-{tool.index}", shape.block_end)
    gbnf = _finish(rules, schemas, root)
    ebnf = _finish(rules, schemas, ebnf_root) if ebnf_root else gbnf
    return Constraint(prefill, gbnf, lazy, schema, tag, ebnf)


#: At most this many calls in one reply (``parallel_tool_calls``): the grammar ends the calls
#: block after the last, so a model that keeps calling cannot run until ``max_tokens``.
MAX_CALLS = 8


def _without_key_opening(name_close: str, fmt: Any) -> str:
    """``name_close`` without the opening of the first parameter's key that the probe call
    leaves at its end (``<｜DSML｜parameter name="``, ``]<]minimax[>[<``)."""
    key_open = fmt.key_open.split("{", 1)[0]
    if key_open and name_close.endswith(key_open):
        return str(name_close[: -len(key_open)])
    return name_close


def _response_lead(template: Any, options: Mapping[str, Any], fmt: Any) -> str:
    """What comes before the calls block where the template wraps the reply's text (Kimi K3's
    ``response`` tag): the empty wrapper, or its close where the prompt opened it."""
    if fmt.response is None:
        return ""
    opener, closer = fmt.response
    from ..parsing.derived_probe import _USER

    try:
        prompt = template.render(_USER, add_generation_prompt=True, **options).rstrip()
    except ChatFmtError:
        prompt = ""
    if prompt.endswith(opener):
        return seq(lit(closer), "ws")
    return f"( {seq(lit(opener), 'ws', lit(closer), 'ws')} )?"


def _id_pattern(fmt: Any, name_close: str) -> str:
    """Call ids as the template writes them: an index (Kimi's ``:0``), else alphanumerics."""
    if fmt.id_end and fmt.name_sep and name_close.startswith(fmt.name_sep):
        written = name_close[len(fmt.name_sep) :].split(fmt.id_end, 1)[0]
        if written.isdigit():
            return "[0-9]{1,4}"
    return "[A-Za-z0-9_-]{1,40}"


def _trigger(fmt: Any, opening: str) -> str | None:
    """The text that starts a call block: its first marker, else the rendered opening."""
    for marker in (fmt.calls_begin.split("{name}", 1)[0], fmt.call_begin):
        if marker.strip():
            return str(marker)
    if fmt.encoding == "xml_function":
        return "<function="
    stripped = opening.strip()
    return stripped or None


def _finish(rules: list[str], schemas: SchemaRules | None, root: str) -> str:
    text = prune("\n".join([f"root ::= {root}", *rules, schemas.rules() if schemas else ""]))
    check_gbnf(text)
    return text


__all__ = ["Constraint", "compile_constraint"]
