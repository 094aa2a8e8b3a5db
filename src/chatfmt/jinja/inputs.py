"""What a Jinja template sees: the caller's messages and tools as plain data.

Messages keep the shape the caller gave (extra keys, custom roles, a missing
``content``), as with transformers, except that tool-call ``arguments`` are
passed as objects. Some templates need another shape; :data:`DIALECTS` lists
the alternatives tried, in order, when a template fails on the first one.

A *view* is one rendering's copy of the data; a sentinel view replaces the
caller's text fields with unique markers (see :mod:`chatfmt.jinja.trace`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError
from ..protocol import ROLE_ALIASES, Conversation, Message, validate_conversation
from .environment import collect_containers

#: Private-use characters that delimit sentinels (field values) and regions (JSON dumps).
S_OPEN, S_CLOSE = "\U000f1a00", "\U000f1a01"
R_OPEN, R_CLOSE = "\U000f1a02", "\U000f1a03"
MARKER_CHARS = frozenset("\U000f1a00\U000f1a01\U000f1a02\U000f1a03\U000f1a10\U000f1a11")
_REASONING = ("reasoning_content", "thinking", "reasoning")


@dataclass(frozen=True)
class Dialect:
    """One way of presenting messages to a template."""

    #: a missing or ``None`` content becomes ``""``
    fill_content: bool = False
    #: without tools, ``tools`` is left undefined instead of ``None``
    tools_undefined: bool = False
    #: tool-call arguments are JSON text instead of objects
    string_arguments: bool = False
    #: undefined values concatenate as empty strings (llama.cpp's engine does this)
    lenient: bool = False


#: Tried in order; the first that renders wins (the first is transformers' own behaviour).
DIALECTS: tuple[Dialect, ...] = (
    Dialect(),
    Dialect(fill_content=True),
    Dialect(tools_undefined=True),
    Dialect(fill_content=True, tools_undefined=True),
    Dialect(string_arguments=True),
    Dialect(fill_content=True, string_arguments=True),
    Dialect(lenient=True),
    Dialect(fill_content=True, tools_undefined=True, lenient=True),
    Dialect(fill_content=True, tools_undefined=True, string_arguments=True, lenient=True),
)


def plain(value: Any) -> Any:
    """A deep copy made only of JSON-like types (what templates may see)."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return value
    if kind is dict:
        return {
            k if type(k) is str else plain(k): v if type(v) is str else plain(v)
            for k, v in value.items()
        }
    if kind is list:
        return [v if type(v) is str else plain(v) for v in value]
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain(dump())
    return f"<{type(value).__name__}>"


@dataclass
class Prepared:
    """Validated conversation plus the caller's raw messages and tools.

    ``raw`` holds private plain copies, except ``{"role": str, "content": str}`` dicts, which
    are the caller's own (renders never change them, see :func:`build_view`).
    """

    conv: Conversation
    raw: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None


def _raw_message(obj: Any, index: int) -> dict[str, Any]:
    if isinstance(obj, Message):
        return plain(obj.to_openai())
    if (
        isinstance(obj, Mapping)
        or dataclasses.is_dataclass(obj)
        or callable(getattr(obj, "model_dump", None))
    ):
        out = plain(obj)
        if isinstance(out, dict):
            return out
    raise ValidationError(
        f"expected a message object (dict with 'role'), got {type(obj).__name__}", index=index
    )


def _is_simple(m: Any) -> bool:
    """A ``{"role": str, "content": str}`` dict: used as it is (templates cannot change it)."""
    return (
        type(m) is dict
        and len(m) == 2
        and type(m.get("content")) is str
        and type(m.get("role")) is str
    )


def prepare(
    messages: Any, tools: Sequence[Any] | None, *, require_tool_calls: bool = True
) -> Prepared:
    """Validate like :func:`validate_conversation`, but keep custom roles and the raw shape."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if isinstance(messages, Conversation):
        conv = messages if tools is None else validate_conversation(messages, tools)
        raw = [_raw_message(m, i) for i, m in enumerate(conv.messages)]
        raw_tools = [plain(t.raw) for t in conv.tools] if conv.tools else None
        return Prepared(conv, raw, raw_tools)
    if isinstance(messages, (bytes, Mapping)) or not isinstance(messages, Iterable):
        raise ValidationError("messages must be a list of message objects", field="messages")
    raw = [m if _is_simple(m) else _raw_message(m, i) for i, m in enumerate(messages)]
    if len({id(m) for m in raw}) < len(raw):  # one dict given twice: each needs its own identity
        raw = [plain(m) for m in raw]
    checked = []
    custom: dict[int, str] = {}
    for i, m in enumerate(raw):
        role = m.get("role")
        if isinstance(role, str) and role and role not in ROLE_ALIASES:
            custom[i] = (
                role  # a template-specific role (e.g. 'tool_response'); the template decides
            )
            m = {**m, "role": "user"}
        checked.append(m)
    conv = validate_conversation(checked, tools, require_tool_calls=require_tool_calls)
    if custom:
        msgs = tuple(
            dataclasses.replace(m, source_role=custom[m.index]) if m.index in custom else m
            for m in conv.messages
        )
        conv = Conversation(msgs, conv.tools)
    raw_tools = plain(list(tools)) if tools is not None else None
    return Prepared(conv, raw, raw_tools)


def shifted(prep: Prepared, before: list[dict[str, Any]]) -> Prepared:
    """``prep`` with extra messages in front (for follow-up renders)."""
    n = len(before)
    head = validate_conversation(before).messages
    moved = tuple(dataclasses.replace(m, index=m.index + n) for m in prep.conv.messages)
    return Prepared(Conversation(head + moved, prep.conv.tools), [*before, *prep.raw], prep.tools)


# --------------------------------------------------------------------------- sentinels
@dataclass
class SentinelTable:
    """Unique markers for the caller's strings, one per (owner message, value)."""

    level: int = 0
    values: list[str] = field(default_factory=list)
    owners: list[int | None] = field(default_factory=list)
    _ids: dict[tuple[int | None, str], int] = field(default_factory=dict)
    #: ids of the view's containers -> owner message (None for tools)
    container_owner: dict[int, int | None] = field(default_factory=dict)

    def mark(self, owner: int | None, value: str) -> str:
        key = (owner, value)
        sid = self._ids.get(key)
        if sid is None:
            sid = self._ids[key] = len(self.values)
            self.values.append(value)
            self.owners.append(owner)
        return f"{S_OPEN}{sid}{S_CLOSE}"


@dataclass
class View:
    """The data of one render."""

    messages: list[dict[str, Any]]
    #: original message index of each view message
    origin: list[int]
    tools: list[dict[str, Any]] | None


def _text(table: SentinelTable | None, owner: int | None, value: Any, *, core: bool) -> Any:
    """Mark ``value`` if tracing it at this level (core fields: message text; others only at level 0)."""
    if table is None or not isinstance(value, str) or not value:
        return value
    if table.level == 0 or (core and value.strip()):
        return table.mark(owner, value)
    return value


def _mark_json(table: SentinelTable | None, owner: int | None, value: Any) -> Any:
    """Mark string keys and leaves of a tool-call argument object (level 0 only)."""
    if table is None or table.level != 0:
        return value
    if isinstance(value, str):
        return _text(table, owner, value, core=False)
    if isinstance(value, dict):
        return {_mark_json(table, owner, k): _mark_json(table, owner, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark_json(table, owner, v) for v in value]
    return value


def _mark_tool(table: SentinelTable | None, tool: dict[str, Any]) -> dict[str, Any]:
    if table is None or table.level != 0:
        return tool
    fn = tool.get("function")
    if isinstance(fn, dict):
        fn = dict(fn)
        for key in ("name", "description"):
            fn[key] = _text(table, None, fn.get(key), core=False) if key in fn else None
            if fn[key] is None and key not in tool.get("function", {}):
                del fn[key]
        params = fn.get("parameters")
        if isinstance(params, dict):
            fn["parameters"] = _mark_descriptions(table, params)
        tool = {**tool, "function": fn}
    return tool


def _mark_descriptions(table: SentinelTable, value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _text(table, None, v, core=False)
            if k == "description" and isinstance(v, str)
            else _mark_descriptions(table, v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mark_descriptions(table, v) for v in value]
    return value


def _merge_system(
    items: list[tuple[int, dict[str, Any]]], joiner: Any
) -> list[tuple[int, dict[str, Any]]]:
    """Fold system messages into the next user message (llama.cpp's workaround for such templates)."""
    out: list[tuple[int, dict[str, Any]]] = []
    pending: list[Any] = []
    first_index = 0

    def flush() -> None:
        if pending:
            out.append((first_index, {"role": "user", "content": joiner(pending)}))
            pending.clear()

    for idx, m in items:
        if m.get("role") in ("system", "developer"):
            if not pending:
                first_index = idx
            pending.append(m.get("content") or "")
            continue
        if pending and m.get("role") == "user":
            content = m.get("content")
            parts = [*pending, content] if isinstance(content, str) and content else list(pending)
            pending.clear()
            out.append((idx, {**m, "content": joiner(parts)}))
            continue
        flush()
        out.append((idx, m))
    flush()
    return out


def build_view(
    prep: Prepared,
    dialect: Dialect,
    *,
    merge_system: bool = False,
    table: SentinelTable | None = None,
) -> View:
    """The messages and tools one render gets (sentinel-marked when ``table`` is given).

    Each message dict the view changes is a new copy; everything else is shared with
    ``prep`` (see :func:`prepare`), as are the caller's tool-call arguments in a real
    render: a template cannot change any of them (the sandbox refuses to mutate the
    caller's containers).
    """
    items: list[tuple[int, dict[str, Any]]] = []
    for msg, raw in zip(prep.conv.messages, prep.raw):
        i = msg.index
        if table is None and _is_simple(raw):
            items.append((i, raw))  # nothing to change: the message as it is
            continue
        m = dict(raw)
        content = m.get("content")
        if isinstance(content, str):
            m["content"] = _text(table, i, content, core=True)
        elif isinstance(content, list):
            m["content"] = [
                {**p, "text": _text(table, i, p["text"], core=True)}
                if isinstance(p, dict) and isinstance(p.get("text"), str)
                else p
                for p in content
            ]
        if "name" in m:
            m["name"] = _text(table, i, m["name"], core=False)
        reasoning = next((m[k] for k in _REASONING if m.get(k) is not None), None)
        if reasoning is not None:
            reasoning = _text(table, i, reasoning, core=True)
            m = {"thinking": reasoning, **m, "reasoning_content": reasoning}
            if isinstance(raw.get("thinking"), str):
                m["thinking"] = _text(table, i, raw["thinking"], core=True)
        calls = m.get("tool_calls")
        if isinstance(calls, list):
            new_calls = []
            for call, parsed in zip(calls, msg.tool_calls):
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    fn = dict(fn)
                    if "name" in fn:
                        fn["name"] = _text(table, i, fn["name"], core=False)
                    if dialect.string_arguments:
                        fn["arguments"] = _text(table, i, parsed.arguments_json, core=True)
                    elif table is None:
                        fn["arguments"] = parsed.arguments
                    else:  # a copy: container ids map to one owner message each
                        fn["arguments"] = _mark_json(table, i, copy.deepcopy(parsed.arguments))
                    call = {**call, "function": fn}
                new_calls.append(call)
            m["tool_calls"] = new_calls
        if dialect.fill_content and m.get("content") is None:
            m["content"] = ""
        items.append((i, m))
    if merge_system:

        def joiner(parts: list[Any]) -> Any:
            return "\n".join(p if isinstance(p, str) else "" for p in parts)

        items = _merge_system(items, joiner)
    tools = [_mark_tool(table, t) for t in prep.tools] if prep.tools is not None else None
    messages = [m for _, m in items]
    origin = [i for i, _ in items]
    if table is not None:
        ids: dict[int, int | None] = {id(messages): None}
        for idx, m in items:
            collect_containers(m, idx, ids)
        collect_containers(tools, None, ids)
        table.container_owner = ids
    return View(messages, origin, tools)
