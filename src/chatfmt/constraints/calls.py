"""GBNF for tool calls written in a :class:`~chatfmt.parsing.ToolCallFormat`, one encoding each.

A call reads ``head NAME mid ARGS tail``; calls sit in a block ``block_begin call (sep call)*
block_end``. The grammar rules are built so that a continuation can start after any prefill
chatfmt writes: after the opening (``block_begin head``: ``required``) or after the name and
what closes it (``named``). Whitespace between markers is free (up to 4 characters), so the
template's own rendering and small variations are accepted; inside JSON, the whitespace of
pretty-printed JSON (``jws``). Argument values: JSON via llama.cpp's JSON-schema converter;
XML-style parameters, bare keys and pythonic keyword arguments are typed per property (strings
raw where the format writes them raw, up to the closing marker), in any order (up to
:data:`ANY_ORDER_LIMIT` properties).
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
    # a block opening that names the function is written per call (:class:`CallGrammar`)
    per_call = "{name}" in fmt.calls_begin
    opt_calls_begin = seq(lit(fmt.calls_begin), "ws") if fmt.calls_begin and not per_call else ""
    calls_end = seq("ws", lit(fmt.calls_end)) if fmt.calls_end else ""
    # inside JSON, whitespace as a pretty-printing template writes it (``jws``)
    # a call id first where the format writes one (Command R7B's ``"tool_call_id": "0", ``)
    json_id = (
        f'( {lit(json.dumps(fmt.id_key))} jws ":" jws "\\"" call-id "\\"" jws "," jws )?'
        if fmt.id_key
        else ""
    )
    json_head = seq(
        '"{"', "jws", json_id, lit(json.dumps(fmt.name_key)), "jws", '":"', "jws", '"\\""'
    )
    json_mid = seq('"\\""', "jws", '","', "jws", lit(json.dumps(fmt.args_key)), "jws", '":"', "jws")
    sep = seq("ws", lit(fmt.separator.strip()), "ws") if fmt.separator.strip() else "ws"
    # a call object may carry its id after the arguments (Mistral v3: ``, "id": "…"``)
    json_end = seq("jws", '( "," jws "\\"id\\"" jws ":" jws "\\"" call-id "\\"" )?', "jws", '"}"')
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
    if enc in ("json_list", "json_keyed"):
        keyed = enc == "json_keyed"
        return Shape(
            seq(opt_calls_begin, lit(fmt.call_begin), "ws", '"["', "jws"),
            seq('"{"', "jws", '"\\""') if keyed else json_head,
            seq('"\\""', "jws", '":"', "jws") if keyed else json_mid,
            seq("jws", '"}"') if keyed else json_end,
            seq("jws", '","', "jws"),
            seq("jws", '"]"', "ws", lit(fmt.call_end), calls_end)
            if fmt.call_end
            else seq("jws", '"]"', calls_end),
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
        unknown = not name_close  # the template's rendering was not found: allow some
        seps = " | ".join(lit(s) for s in (fmt.name_sep, *fmt.name_seps))
        mid = seq(
            "ws" if unknown or name_close[:1].isspace() else "",
            f"( {seps} )" if fmt.name_seps else lit(fmt.name_sep),
            *(("call-id", lit(fmt.id_end)) if fmt.id_end else ()),
            "ws" if unknown or name_close[-1:].isspace() else "",
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
        mid = (
            seq(
                "ws",
                lit(fmt.name_sep),
                *(("call-id", lit(fmt.id_end)) if fmt.id_end else ()),
                "ws",
            )
            if fmt.name_sep
            else "ws"
        )
        return Shape(
            opt_calls_begin,
            seq(lit(fmt.call_begin), "ws"),
            mid,
            lit(fmt.call_end),
            sep,
            calls_end,
            False,
        )
    if enc == "bare_keys":
        return Shape(
            opt_calls_begin,
            lit(fmt.call_begin),
            lit(fmt.name_sep),
            lit(fmt.call_end),
            sep,
            calls_end,
            False,
        )
    if enc == "pythonic":
        if fmt.name_sep:  # ``NAME<sep>k=v, …<end>`` (ChatGLM3's ``tool_call(…)``)
            return Shape(
                opt_calls_begin,
                lit(fmt.call_begin),
                lit(fmt.name_sep),
                lit(fmt.call_end),
                sep,
                calls_end,
                False,
            )
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
            head = self.shape.head
            if "{name}" in fmt.calls_begin:  # Glimmer: `` to=NAME<|message|>`` before the block
                head = seq(lit(fmt.calls_begin.replace("{name}", tool.name)), "ws", head)
            self.rules.append(f"args-{n} ::= {args}")
            self.rules.append(
                f"call-{n} ::= {seq(head, lit(name), self.shape.mid, f'args-{n}', self.shape.tail)}"
            )
            self.rules.append(
                f"rest-{n} ::= {seq(lit(name), self.shape.mid, f'args-{n}', self.shape.tail)}"
            )
            self.rules.append(f"after-name-{n} ::= {seq(f'args-{n}', self.shape.tail)}")

    # ------------------------------------------------------------------ arguments
    def _args(self, tool: Tool) -> str:
        field = f"tools[{tool.index}].function.parameters"
        enc = self.fmt.encoding
        if enc in JSON_ARGUMENTS or enc == "json_keyed":
            return self._schemas.rule(_object_schema(tool.parameters), f"t{tool.index}-args", field)
        props = tool.parameters.get("properties") or {}
        required = set(tool.parameters.get("required") or ())
        items: list[tuple[str, bool]] = []
        for j, (key, schema) in enumerate(props.items()):
            where = f"{field}.properties.{key}"
            spec = schema if isinstance(schema, Mapping) else {}
            value = self._value(spec, key, f"t{tool.index}-p{j}", where)
            items.append((self._param(key, spec, value), key in required))
        sep = {"pythonic": seq('","', "ws"), "bare_keys": '","'}.get(str(enc), "")
        return self._ordered(items, sep, f"t{tool.index}-kv")

    def _marker(self, text: str, key: str, schema: Mapping[str, Any]) -> str:
        """``text`` with its ``{key}`` / ``{type}`` placeholders filled in, as GBNF."""
        text = text.replace("{key}", key)
        if "{type}" not in text:
            return lit(text)
        words = dict(self.fmt.type_words)
        kind = schema.get("type")
        if isinstance(kind, str) and (kind in words or "*" in words):
            found = {words.get(kind, words.get("*", ""))}
        else:  # no single type: any word the format writes
            found = set(words.values())
        before, after = text.split("{type}", 1)
        return seq(lit(before), "( " + " | ".join(lit(w) for w in sorted(found)) + " )", lit(after))

    def _param(self, key: str, schema: Mapping[str, Any], value: str) -> str:
        fmt = self.fmt
        if fmt.encoding == "xml_function":
            return seq(
                self._marker(fmt.key_open + key + fmt.key_close, key, schema),
                value,
                self._marker(fmt.value_close, key, schema),
                "ws",
            )
        if fmt.encoding == "xml_pairs":
            return seq(
                self._marker(fmt.key_open + key + fmt.key_close, key, schema),
                *(("ws", lit(fmt.value_open)) if fmt.value_open else ()),
                value,
                self._marker(fmt.value_close, key, schema),
                "ws",
            )
        if fmt.encoding == "bare_keys":
            return seq(lit(key + fmt.key_close), value)
        return seq(lit(key + "="), value)  # pythonic

    def _value(self, schema: Mapping[str, Any], key: str, name: str, field: str) -> str:
        enc = self.fmt.encoding
        kind = schema.get("type")
        strings = schema.get("enum")
        if enc == "pythonic":
            return self._python_value(schema, name, field)
        if enc == "bare_keys":
            return self._bare_value(schema, name, field)
        close = self.fmt.value_close.replace("{key}", key)
        if "{type}" in close:
            close = close.split("{type}", 1)[0]
        if kind == "string" and not strings and "const" not in schema:
            return self._raw(close)
        if isinstance(strings, list) and strings and all(isinstance(s, str) for s in strings):
            return seq("ws", "(" + " | ".join(lit(s) for s in strings) + ")", "ws")
        if kind == "boolean":  # written with str() by some templates: True/False
            return seq("ws", '( "true" | "false" | "True" | "False" )', "ws")
        return seq("ws", self._schemas.rule(schema, name, field), "ws")

    def _raw(self, close: str) -> str:
        """Raw text up to ``close`` (a rule shared by the values that end with it)."""
        rule = f"raw-{_slug(close)}"
        if rule not in self._shared:
            self._shared.add(rule)
            self.rules.extend(until_rules(rule, close))
        return rule

    def _bare_value(self, schema: Mapping[str, Any], name: str, field: str) -> str:
        """A value written with bare keys and delimited strings (Gemma 4's ``<|"|>``)."""
        quote = lit(self.fmt.value_open)
        end = lit(self.fmt.value_close)
        kind = schema.get("type")
        strings = schema.get("enum")
        if isinstance(strings, list) and strings and all(isinstance(s, str) for s in strings):
            return seq(quote, "(" + " | ".join(lit(s) for s in strings) + ")", end)
        if kind == "string":
            return seq(quote, self._raw(self.fmt.value_close), end)
        if kind in ("integer", "number", "boolean", "null"):
            return self._schemas.rule(schema, name, field)
        if "bare" not in self._shared:
            self._shared.add("bare")
            self._raw(self.fmt.value_close)
            raw = f"raw-{_slug(self.fmt.value_close)}"
            self.rules.extend(
                [
                    f"bare-str ::= {seq(quote, raw, end)}",
                    "bare-key ::= [A-Za-z_] [A-Za-z0-9_]*",
                    'bare-num ::= "-"? [0-9]+ ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?',
                    'bare-value ::= bare-str | bare-num | "true" | "false" | "null" '
                    '| "[" ( bare-value ( "," bare-value )* )? "]" '
                    '| "{" ( bare-key ":" bare-value ( "," bare-key ":" bare-value )* )? "}"',
                ]
            )
        return "bare-value"

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
        """The items, each required one present, optional ones maybe, each at most once;
        ``sep`` between two. In any order up to :data:`ANY_ORDER_LIMIT` items (one rule per
        set of items written so far), in schema order beyond."""
        if not items:
            return '""'
        if len(items) > ANY_ORDER_LIMIT:
            return self._in_order(items, sep, prefix)
        # each item once as a rule of its own; the subset rules name it
        for i, (expr, _) in enumerate(items):
            self.rules.append(f"{prefix}-item-{i} ::= {expr}")
        items = [(f"{prefix}-item-{i}", req) for i, (_, req) in enumerate(items)]
        everything = (1 << len(items)) - 1
        needed = sum(1 << i for i, (_, req) in enumerate(items) if req)
        todo = [0]
        seen = {0}
        while todo:
            mask = todo.pop()
            alts = []
            for i, (expr, _) in enumerate(items):
                if mask & (1 << i):
                    continue
                nxt = mask | (1 << i)
                alts.append(
                    seq(sep if mask else "", expr, f"{prefix}-{nxt}" if nxt != everything else "")
                )
                if nxt != everything and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
            body = " | ".join(alts)
            if needed & mask == needed:  # every required item is written: it may end here
                body = f"( {body} )?"
            self.rules.append(f"{prefix}-{mask} ::= {body}")
        return f"{prefix}-0"

    def _in_order(self, items: Sequence[tuple[str, bool]], sep: str, prefix: str) -> str:
        """Items in schema order, each required one present, optional ones maybe."""
        if not sep:
            return seq(*(expr if req else f"( {expr} )?" for expr, req in items))
        # rule o-k-l: items[k:], ``l``: a separator comes before the first one written
        for k in range(len(items) - 1, -1, -1):
            expr, req = items[k]
            for lead in (0, 1):
                first = seq(
                    sep if lead else "", expr, f"{prefix}-o-{k + 1}-1" if k + 1 < len(items) else ""
                )
                skip = f"{prefix}-o-{k + 1}-{lead}" if k + 1 < len(items) else '""'
                body = first if req else f"{first} | {skip}"
                self.rules.append(f"{prefix}-o-{k}-{lead} ::= {body}")
        return f"{prefix}-o-0-0"


#: Up to this many properties, XML-style and pythonic arguments may come in any order (the
#: grammar has one rule per subset of properties: 2**n rules); beyond, in schema order.
ANY_ORDER_LIMIT = 6


def _object_schema(parameters: Mapping[str, Any]) -> Mapping[str, Any]:
    if not parameters:
        return {"type": "object"}
    return parameters


def _slug(text: str) -> str:
    out = "".join(c if c.isalnum() else "-" for c in text).strip("-")
    return out or "x"


def _py_repr(value: Any) -> str:
    return repr(value)
