"""The request's schemas, checked: tools (``tools[i].function.parameters``) and
``response_format`` (``json_object`` / ``json_schema``), with jsonschema's ``check_schema``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ChatFmtError, ValidationError
from .calls import Tool


def check_schema(schema: Any, field: str) -> None:
    """Raise :class:`ValidationError` naming ``field`` unless ``schema`` is a valid JSON schema.

    Checked against the draft the schema names (``$schema``), else draft 7 (what OpenAI's
    function schemas are written in; its meta-schema checks ~10x faster than 2020-12's).
    Results are cached per schema text."""
    if not isinstance(schema, (Mapping, bool)):
        raise ValidationError(
            f"a JSON schema is an object, not {type(schema).__name__}", field=field
        )
    key = json.dumps(schema, sort_keys=True, default=repr)
    found = _CHECKED.get(key)
    if found is None:
        found = _CHECKED[key] = _schema_error(schema)
        if len(_CHECKED) > 4096:
            _CHECKED.clear()
    if found:
        raise ValidationError(found, field=field)


#: Schema text → its problem ("" when valid).
_CHECKED: dict[str, str] = {}
_META: dict[Any, Any] = {}


def _schema_error(schema: Any) -> str:
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - depends on the install
        raise ChatFmtError("checking schemas needs jsonschema: install chatfmt[agent]") from None
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    meta = _META.get(cls)
    if meta is None:
        meta = _META[cls] = cls(cls.META_SCHEMA)
    error = jsonschema.exceptions.best_match(meta.iter_errors(schema))
    if error is None:
        return ""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
    return f"invalid JSON schema{' at ' + where if where else ''}: {error.message}"


def response_schema(response_format: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The schema ``response_format`` asks the content to satisfy, or ``None`` (text)."""
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        raise ValidationError("response_format is an object", field="response_format")
    kind = response_format.get("type")
    if kind in (None, "text"):
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind != "json_schema":
        raise ValidationError(
            f"unknown response_format type {kind!r} (text, json_object or json_schema)",
            field="response_format.type",
        )
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping):
        raise ValidationError(
            "json_schema is an object with a schema", field="response_format.json_schema"
        )
    schema = spec.get("schema", {})
    check_schema(schema, "response_format.json_schema.schema")
    if schema is True or schema == {}:
        return {}
    if schema is False:
        raise ValidationError(
            "a false schema accepts nothing", field="response_format.json_schema.schema"
        )
    return dict(schema)


def offered_tools(tools: Sequence[Mapping[str, Any]]) -> list[Tool]:
    """The function tools of a request, their parameter schemas checked."""
    found: list[Tool] = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ValidationError(
                'a tool is {"type": "function", "function": {"name": …}}', field=f"tools[{i}]"
            )
        params = function.get("parameters")
        if params is None:
            params = {"type": "object", "properties": {}}
        field = f"tools[{i}].function.parameters"
        check_schema(params, field)
        if not isinstance(params, Mapping) or params.get("type", "object") != "object":
            raise ValidationError("a function's parameters are an object schema", field=field)
        found.append(Tool(function["name"], dict(params), i))
    return found
