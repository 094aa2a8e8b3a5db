"""GBNF for tool calls written in a :class:`~chatfmt.parsing.ToolCallFormat`, one encoding each.

A call reads ``head NAME mid ARGS tail``; calls sit in a block ``block_begin call (sep call)*
block_end``. The grammar rules are built so that a continuation can start after any prefill
chatfmt writes: after the opening (``block_begin head``: ``required``) or after the name and
what closes it (``named``). Whitespace between markers is free (up to 4 characters), so the
template's own rendering and small variations are accepted. Argument values: JSON via
llama.cpp's JSON-schema converter; XML-style parameters and pythonic keyword arguments are
typed per property (strings raw where the format writes them raw, up to the closing marker).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..parsing.derived_format import ToolCallFormat
from .gbnf import SchemaRules, lit, seq, until_rules

#: Encodings whose arguments are one JSON object.
JSON_ARGUMENTS = frozenset({"json_call", "json_list", "bare_json_call", "json_arguments"})


@dataclass(frozen=True)
class Tool:
    """An offered function: its name and parameters schema, and where it came from."""

    name: str
    parameters: Mapping[str, Any]
    index: int


@dataclass(frozen=True)
class Shape:
    """The GBNF expressions of one encoding (see the module docstring)."""

    block_begin: str
    head: str
    mid: str
    tail: str
    sep: str
    block_end: str
    json_name: bool  # the name is written inside a JSON string


def shape(fmt: ToolCallFormat, name_close: str = "") -> Shape:
    """The block/call expressions of ``fmt``'s encoding (``name_close``: what the template
    writes between a call's name and its arguments, where known)."""
    enc = fmt.encoding
    opt_calls_begin = seq(lit(fmt.calls_begin), "ws") if fmt.calls_begin else ""
    calls_end = seq("ws", lit(fmt.calls_end)) if fmt.calls_end else ""
    json_head = seq('"{"', "ws", lit(json.dumps(fmt.name_key)), "ws", '":"', "ws", '"\\""')
    json_mid = seq('"\\""', "ws", '","', "ws", lit(json.dumps(fmt.args_key)), "ws", '":"', "ws")
    sep = seq("ws", lit(fmt.separator.strip()), "ws") if fmt.separator.strip() else "ws"
    # a call object may carry its id after the arguments (Mistral v3: ``, "id": "…"``)
    json_end = seq("ws", '( "," ws "\\"id\\"" ws ":" ws "\\"" call-id "\\"" )?', "ws", '"}"')
    if enc == "json_call":
        return Shape(
            opt_calls_begin,
            seq(lit(fmt.call_begin), "ws", json_head),
            json_mid,
            seq(json_end, "ws", lit(fmt.call_end)),
            sep,
            calls_end,
            True,
        )
    if enc == "json_list":
        return Shape(
            seq(opt_calls_begin, lit(fmt.call_begin), "ws", '"["', "ws"),
            json_head,
            json_mid,
            json_end,
            seq("ws", '","', "ws"),
            seq("ws", '"]"', "ws", lit(fmt.call_end), calls_end)
            if fmt.call_end
            else seq("ws", '"]"', calls_end),
            True,
        )
    if enc == "bare_json_call":
        return Shape("", json_head, json_mid, json_end, seq("ws", '";"', "ws"), "", True)
    if enc == "json_arguments":
        head = (
            seq(lit(fmt.call_begin), "call-id", lit(fmt.name_open))
            if fmt.name_open
            else lit(fmt.call_begin)
        )
        # whitespace around the separator only where the template writes some (DeepSeek's
        # "\n```json\n"); none in ``functions.NAME:0`` (Kimi), where it would join the name
        mid = seq(
            "ws" if name_close[:1].isspace() else "",
            lit(fmt.name_sep),
            *(("call-id", lit(fmt.id_end)) if fmt.id_end else ()),
            "ws" if name_close[-1:].isspace() else "",
        )
        return Shape(
            opt_calls_begin, head, mid, seq("ws", lit(fmt.call_end)), sep, calls_end, False
        )
    if enc == "xml_function":
        return Shape(
            opt_calls_begin,
            seq(lit(fmt.call_begin), "ws", '"<function="'),
            seq('">"', "ws"),
            seq('"</function>"', "ws", lit(fmt.call_end)),
            "ws",
            calls_end,
            False,
        )
    if enc == "xml_pairs":
        return Shape(
            opt_calls_begin,
            seq(lit(fmt.call_begin), "ws"),
            "ws",
            lit(fmt.call_end),
            "ws",
            calls_end,
            False,
        )
    if enc == "pythonic":
        begin = seq(lit(fmt.call_begin), "ws", '"["') if fmt.call_begin else '"["'
        end = seq('"]"', "ws", lit(fmt.call_end)) if fmt.call_end else '"]"'
        return Shape(begin, "", '"("', '")"', seq('","', "ws"), end, False)
    raise ValueError(f"unknown tool-call encoding {enc!r}")


class CallGrammar:
    """The rules for calls of ``tools`` in ``fmt``: ``call-N`` (a whole call of tool N),
    ``name-N``/``args-N`` (its name and arguments) and the shared rules they use."""

    def __init__(
        self, fmt: ToolCallFormat, tools: Sequence[Tool], schemas: SchemaRules, name_close: str = ""
    ) -> None:
        self.fmt = fmt
        self.shape = shape(fmt, name_close)
        self.rules: list[str] = []
        self._schemas = schemas
        self._shared: set[str] = set()
        for tool in tools:
            n = tool.index
            name = json.dumps(tool.name)[1:-1] if self.shape.json_name else tool.name
            args = self._args(tool)
            self.rules.append(f"args-{n} ::= {args}")
            self.rules.append(
                f"call-{n} ::= {seq(self.shape.head, lit(name), self.shape.mid, f'args-{n}', self.shape.tail)}"
            )
            self.rules.append(
                f"rest-{n} ::= {seq(lit(name), self.shape.mid, f'args-{n}', self.shape.tail)}"
            )
            self.rules.append(f"after-name-{n} ::= {seq(f'args-{n}', self.shape.tail)}")

    # ------------------------------------------------------------------ arguments
    def _args(self, tool: Tool) -> str:
        field = f"tools[{tool.index}].function.parameters"
        enc = self.fmt.encoding
        if enc in JSON_ARGUMENTS:
            return self._schemas.rule(_object_schema(tool.parameters), f"t{tool.index}-args", field)
        props = tool.parameters.get("properties") or {}
        required = set(tool.parameters.get("required") or ())
        items: list[tuple[str, bool]] = []
        for j, (key, schema) in enumerate(props.items()):
            where = f"{field}.properties.{key}"
            value = self._value(
                schema if isinstance(schema, Mapping) else {}, f"t{tool.index}-p{j}", where
            )
            items.append((self._param(key, value), key in required))
        sep = seq('","', "ws") if enc == "pythonic" else ""
        return self._ordered(items, sep, f"t{tool.index}-kv")

    def _param(self, key: str, value: str) -> str:
        fmt = self.fmt
        if fmt.encoding == "xml_function":
            return seq(lit(fmt.key_open + key + fmt.key_close), value, lit(fmt.value_close), "ws")
        if fmt.encoding == "xml_pairs":
            return seq(
                lit(fmt.key_open + key + fmt.key_close),
                "ws",
                lit(fmt.value_open),
                value,
                lit(fmt.value_close),
                "ws",
            )
        return seq(lit(key + "="), value)  # pythonic

    def _value(self, schema: Mapping[str, Any], name: str, field: str) -> str:
        enc = self.fmt.encoding
        kind = schema.get("type")
        strings = schema.get("enum")
        if enc == "pythonic":
            return self._python_value(schema, name, field)
        close = self.fmt.value_close
        if kind == "string" and not strings and "const" not in schema:
            rule = f"raw-{_slug(close)}"
            if rule not in self._shared:
                self._shared.add(rule)
                self.rules.extend(until_rules(rule, close))
            return rule
        if isinstance(strings, list) and strings and all(isinstance(s, str) for s in strings):
            return seq("ws", "(" + " | ".join(lit(s) for s in strings) + ")", "ws")
        if kind == "boolean" and enc == "xml_function":  # written with str(): True/False
            return seq("ws", '( "true" | "false" | "True" | "False" )', "ws")
        return seq("ws", self._schemas.rule(schema, name, field), "ws")

    def _python_value(self, schema: Mapping[str, Any], name: str, field: str) -> str:
        kind = schema.get("type")
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return "(" + " | ".join(lit(_py_repr(v)) for v in schema["enum"]) + ")"
        if kind == "string":
            self._need_python()
            return "py-str"
        if kind == "boolean":
            return '("True" | "False")'
        if kind == "null":
            return '"None"'
        if kind in ("integer", "number"):
            return self._schemas.rule(schema, name, field)
        self._need_python()
        return "py-value"

    def _need_python(self) -> None:
        if "py" in self._shared:
            return
        self._shared.add("py")
        self.rules.extend(
            [
                'py-str ::= "\'" ( [^\'\\\\\\n] | "\\\\" [^\\n] )* "\'" | "\\"" ( [^"\\\\\\n] | "\\\\" [^\\n] )* "\\""',
                'py-num ::= "-"? [0-9]+ ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?',
                'py-value ::= py-str | py-num | "True" | "False" | "None" | "[" ws ( py-value ( ws "," ws py-value )* )? ws "]" | "{" ws ( py-str ws ":" ws py-value ( ws "," ws py-str ws ":" ws py-value )* )? ws "}"',
            ]
        )

    def _ordered(self, items: Sequence[tuple[str, bool]], sep: str, prefix: str) -> str:
        """Items in order, each required one present, optional ones maybe; ``sep`` between two."""
        if not items:
            return '""'
        if not sep:
            return seq(*(expr if req else f"( {expr} )?" for expr, req in items))
        # rule k-l: items[k:], ``l``: a separator comes before the first one written
        for k in range(len(items) - 1, -1, -1):
            expr, req = items[k]
            for lead in (0, 1):
                first = seq(
                    sep if lead else "", expr, f"{prefix}-{k + 1}-1" if k + 1 < len(items) else ""
                )
                skip = f"{prefix}-{k + 1}-{lead}" if k + 1 < len(items) else '""'
                body = first if req else f"{first} | {skip}"
                self.rules.append(f"{prefix}-{k}-{lead} ::= {body}")
        return f"{prefix}-0-0"


def _object_schema(parameters: Mapping[str, Any]) -> Mapping[str, Any]:
    if not parameters:
        return {"type": "object"}
    return parameters


def _slug(text: str) -> str:
    out = "".join(c if c.isalnum() else "-" for c in text).strip("-")
    return out or "x"


def _py_repr(value: Any) -> str:
    return repr(value)
