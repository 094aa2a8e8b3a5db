"""Typed values for formats that write each argument as text (XML-style parameters).

Qwen3-Coder ``<parameter=k>v</parameter>``, MiniMax / DeepSeek DSML
``<parameter name="k">v</parameter>`` and similar formats carry every argument as
a string. The tool's JSON schema says what it is: :func:`typed_value` converts the
text to the declared type (``integer``, ``number``, ``boolean``, ``null``,
``object``, ``array``; also a list of types, ``anyOf``/``oneOf``, ``enum``), and keeps
the string when no schema is given, the schema says ``string``, or the text does not
convert. A few type names that are not JSON Schema's but that schemas are written with
(``float``, ``double``, ``int``, ``bool``, ``str``, ``dict``, ``list``) are read as the JSON
type they name, as vLLM's Qwen3-Coder parser reads them; other unknown names keep the text. :class:`JsonMembers` streams the converted pairs as the call's JSON
argument text: ``{"k": v`` then ``, "k": v`` per pair and ``}`` at the end — the
same text however the input is cut.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping
from enum import auto
from typing import Any

from .base import Emitter
from .json_stream import loads_or_none
from .states import State

_TRUE = ("true", "True")
_FALSE = ("false", "False")
_NULL = ("null", "None")


def parameter_schema(tools_schema: Any, key: str) -> Any:
    """The schema of parameter ``key`` in a tool's parameters schema (``None`` if not given)."""
    if isinstance(tools_schema, Mapping):
        props = tools_schema.get("properties")
        if isinstance(props, Mapping):
            return props.get(key)
    return None


#: Type names schemas are written with that are not JSON Schema's → the JSON type they name.
TYPE_ALIASES = {
    "float": "number",
    "double": "number",
    "int": "integer",
    "bool": "boolean",
    "str": "string",
    "dict": "object",
    "list": "array",
}


def _types(schema: Any) -> list[str]:
    """The JSON types a parameter schema allows, in the order given."""
    if not isinstance(schema, Mapping):
        return []
    found: list[str] = []
    kind = schema.get("type")
    if isinstance(kind, str):
        found.append(TYPE_ALIASES.get(kind, kind))
    elif isinstance(kind, list):
        found.extend(TYPE_ALIASES.get(k, k) for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key) or ():
            found.extend(_types(sub))
    if not found and "enum" in schema:
        found.extend(_json_type(v) for v in schema["enum"])
    if not found and isinstance(schema.get("properties"), Mapping):
        found.append("object")
    return list(dict.fromkeys(found))


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def _convert(text: str, kind: str) -> tuple[bool, Any]:
    """``(True, value)`` if ``text`` reads as JSON type ``kind``."""
    stripped = text.strip()
    if kind == "string":
        return True, text
    if kind == "integer":
        try:
            return True, int(stripped)
        except ValueError:
            ok, value = loads_or_none(stripped)
            if ok and isinstance(value, float) and value.is_integer():
                return True, int(value)
            return False, None
    if kind == "number":
        try:
            value = int(stripped)
        except ValueError:
            try:
                value = float(stripped)
            except ValueError:
                return False, None
            if not math.isfinite(value):  # JSON has no inf / nan
                return False, None
        return True, value
    if kind == "boolean":
        if stripped in _TRUE:
            return True, True
        if stripped in _FALSE:
            return True, False
        return False, None
    if kind == "null":
        return (True, None) if stripped in _NULL else (False, None)
    if kind in ("object", "array"):
        want = dict if kind == "object" else list
        ok, value = loads_or_none(stripped)
        if not ok:  # models sometimes write Python literals ({'a': 1}, [True])
            try:
                value = ast.literal_eval(stripped)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return False, None
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                return False, None
        return (True, value) if isinstance(value, want) else (False, None)
    return False, None


def typed_value(text: str, schema: Any) -> Any:
    """``text`` converted to the type ``schema`` declares; the string itself when it does not.

    With several allowed types the first that converts wins, ``string`` last (so
    ``["integer", "string"]`` turns ``"7"`` into ``7`` and ``"seven"`` stays text).
    """
    kinds = _types(schema)
    if not kinds:
        return text
    for kind in sorted(kinds, key=lambda k: k == "string"):
        ok, value = _convert(text, kind)
        if ok:
            return value
    return text


class JsonMembers:
    """Writes a call's arguments as JSON text, one member at a time (see module doc)."""

    __slots__ = ("index", "keys", "out", "started")

    def __init__(self, out: Emitter, index: int) -> None:
        self.out = out
        self.index = index
        self.started = False
        self.keys: set[str] = set()

    def member(self, key: str, value: Any) -> None:
        """Emit ``"key": value`` (opening the object first)."""
        self.key(key, json.dumps(value, ensure_ascii=False))

    def key(self, key: str, value_text: str = "") -> None:
        """Emit ``"key": `` and the start of its value (opening the object first). A key
        written twice flags the call (both members are kept; a JSON reader keeps the last)."""
        piece = json.dumps(key, ensure_ascii=False) + ": " + value_text
        self.out.args(self.index, (", " if self.started else "{") + piece)
        self.started = True
        if key in self.keys:
            self.out.fail(self.index, f"parameter {key!r} written twice")
        else:
            self.keys.add(key)

    def close(self) -> None:
        """Emit the closing ``}`` (``{}`` for a call without arguments)."""
        self.out.args(self.index, "}" if self.started else "{}")


class ArgPart(State):
    """Where a ``key=value`` argument scanner is (its loop tests this per token)."""

    KEY = auto()  # before an argument: its key (or a positional value)
    VALUE = auto()  # the argument's value


class KeywordArgs:
    """Shared state of the scanners of ``key=value`` / ``key:value`` argument lists (pythonic
    calls, Gemma 4): members streamed as JSON, or — once a value does not read — the call
    flagged and the rest of its raw text kept as its arguments.

    ``status`` is ``None`` while scanning; subclasses set ``"done"``, ``"failed"``, ….
    """

    __slots__ = (
        "_depth",
        "_failed",
        "_key",
        "_members",
        "_raw",
        "_state",
        "index",
        "out",
        "status",
    )

    def __init__(self, out: Emitter, index: int) -> None:
        self.out = out
        self.index = index
        self.status: str | None = None
        self._members = JsonMembers(out, index)
        self._state = ArgPart.KEY
        self._key: str | None = None
        self._raw: list[str] = []  # raw text of the current argument (separators included)
        self._depth = 0
        self._failed = False

    def _fail(self, reason: str) -> None:
        """Flag the call once (its later text is kept raw)."""
        if not self._failed:
            self._failed = True
            self.out.fail(self.index, reason)

    def _flush_raw(self) -> None:
        """Emit the current argument's raw text if the call is flagged; forget it either way."""
        if self._failed:
            self.out.args(self.index, "".join(self._raw))
        self._raw.clear()
