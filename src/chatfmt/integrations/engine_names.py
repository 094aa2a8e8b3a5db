"""The parser names chatfmt adds to a serving engine, and what each one parses with.

Every chatfmt tool parser ``NAME`` becomes the engine tool parser ``chatfmt-NAME`` and every
chatfmt reasoning parser ``NAME`` the engine reasoning parser ``chatfmt-NAME``; the name
``chatfmt`` (both kinds) reads the model's own chat template, as chatfmt recognizes it
(native family) or derives a parser from it. :class:`EngineParser` says what one engine name
means; :func:`engine_plan` gives the cached
:class:`~chatfmt.integrations.engine_stream.StreamPlan` for a pair of engine names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ParseError
from ..parsing import REASONING_PARSERS, TOOL_PARSERS
from ..requests import FromTemplate
from .engine_stream import StreamPlan, stream_plan

__all__ = [
    "PREFIX",
    "TEMPLATE_NAME",
    "EngineParser",
    "chat_template_of",
    "chatfmt_name",
    "engine_names",
    "engine_plan",
    "is_chatfmt_name",
    "parser_class",
]

#: The engine name of the parser that reads the model's own chat template.
TEMPLATE_NAME = "chatfmt"
#: The prefix of every other chatfmt parser name inside an engine.
PREFIX = "chatfmt-"


@dataclass(frozen=True, slots=True)
class EngineParser:
    """One engine parser name: ``chatfmt`` is ``None`` for the template-derived parser."""

    engine_name: str
    chatfmt: str | None


def engine_names(kind: str) -> list[EngineParser]:
    """Every engine name of ``kind`` (``"tool"`` or ``"reasoning"``), template one first."""
    names = TOOL_PARSERS if kind == "tool" else REASONING_PARSERS
    return [EngineParser(TEMPLATE_NAME, None)] + [
        EngineParser(PREFIX + name, name) for name in sorted(names)
    ]


_CLASSES: dict[tuple[type, str], type] = {}


def parser_class(base: type, parser: EngineParser) -> type:
    """The subclass of an adapter ``base`` class for one engine name (made once, then reused).

    The engine builds parsers from classes by name: each name gets its own class, with
    ``engine_name`` set, so registering again finds the very same class.
    """
    key = (base, parser.engine_name)
    found = _CLASSES.get(key)
    if found is None:
        label = (parser.chatfmt or "template").replace("-", "_").replace(".", "_")
        found = type(
            f"Chatfmt_{label}_{base.__name__}",
            (base,),
            {"engine_name": parser.engine_name, "__module__": base.__module__},
        )
        _CLASSES[key] = found
    return found


def chat_template_of(tokenizer: Any) -> str:
    """The model's own Jinja chat template, read from an engine's tokenizer (or its wrapper)."""
    seen = tokenizer
    for _ in range(4):  # engines wrap the Hugging Face tokenizer one or two levels deep
        source = getattr(seen, "chat_template", None)
        if isinstance(source, dict):
            source = source.get("default") or next(iter(source.values()), None)
        if isinstance(source, str) and source:
            return source
        seen = getattr(seen, "tokenizer", None) or getattr(seen, "model", None)
        if seen is None:
            break
    raise ParseError(
        f"the {TEMPLATE_NAME!r} parser reads the model's chat template, and the engine's "
        f"tokenizer ({type(tokenizer).__name__}) has none: choose a {PREFIX}<name> parser"
    )


def chatfmt_name(engine_name: str) -> str | None:
    """The chatfmt parser behind an engine name (``None``: the template-derived one)."""
    if engine_name == TEMPLATE_NAME:
        return None
    if not engine_name.startswith(PREFIX):
        raise ParseError(f"{engine_name!r} is not a chatfmt parser name ({PREFIX}<name>)")
    return engine_name[len(PREFIX) :]


def is_chatfmt_name(engine_name: str | None) -> bool:
    """Whether ``engine_name`` is one of chatfmt's engine parser names."""
    return engine_name is not None and (
        engine_name == TEMPLATE_NAME or engine_name.startswith(PREFIX)
    )


def engine_plan(
    tool: str | None,
    reasoning: str | None,
    tokenizer: Any = None,
    *,
    prefilled: bool | None = None,
) -> StreamPlan:
    """The cached plan for engine names ``tool`` and ``reasoning`` (``None``: that part off).

    With neither part the output is all content. ``prefilled``: the prompt already opened
    the reasoning block (``None``: as the template says; a bare reasoning parser then
    assumes it did not).
    """
    tool_cf = chatfmt_name(tool) if tool is not None else None
    reasoning_cf = chatfmt_name(reasoning) if reasoning is not None else None
    parser = tool_cf if tool is not None else "plain"
    if TEMPLATE_NAME in (tool, reasoning):
        chosen: Any = None
        if reasoning is not None:
            chosen = FromTemplate.TEMPLATE if reasoning_cf is None else reasoning_cf
        return stream_plan(
            chat_template_of(tokenizer),
            tokenizer=tokenizer,
            parser=parser,
            reasoning_parser=chosen,
            thinking_prefilled=prefilled,
        )
    return stream_plan(
        None,
        tokenizer=tokenizer,
        parser=parser,
        reasoning_parser=reasoning_cf,
        thinking_prefilled=prefilled,
    )
