"""The typed message model: OpenAI chat format in, validated once at the edge.

Everything downstream (templates, tokenization, parsing) works on these objects and
never on raw JSON. :func:`validate_conversation` is the one entry point; it never
mutates the caller's objects. Validated objects are read-only by convention (slots
dataclasses, not frozen, for speed); ``Tool.raw`` and object-form
``ToolCall.arguments`` are the caller's own objects, which templates never write to.

Extra message keys are ignored (OpenAI clients send fields such as ``refusal`` or
``audio``), except near-misses of ``tool_calls`` (``tool_call``, ``toolcalls``) and
the legacy ``function_call``, which are rejected rather than silently dropped.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import ValidationError

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")

#: Role names accepted on input and the canonical role they map to.
ROLE_ALIASES: dict[str, str] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "tool": "tool",
    "environment": "tool",
    "observation": "tool",
    "function": "tool",
    "ipython": "tool",
}

#: Message keys that are clearly a mistake for ``tool_calls`` (rejected, not ignored).
_WRONG_KEYS: dict[str, str] = {
    "tool_call": "misspelled key 'tool_call': use 'tool_calls' (a list)",
    "toolcalls": "misspelled key 'toolcalls': use 'tool_calls' (a list)",
    "function_call": "the legacy OpenAI 'function_call' is not supported: use 'tool_calls'",
}


def _check_text(value: str, index: int | None, where: str) -> None:
    """Reject lone surrogates (text that is not valid Unicode and cannot become UTF-8)."""
    if value.isascii():  # O(1) in CPython for the common case
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"contains a lone surrogate {value[exc.start]!r} at char {exc.start} "
            "(not valid Unicode text)",
            index=index,
            field=where,
        ) from None


#: One reusable encoder: ``json.dumps(..., ensure_ascii=False)`` builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


#: The C encoder behind it, made once (``JSONEncoder.encode`` builds one per call). Without
#: circular-reference markers a cycle ends in ``RecursionError``, which callers report.
def _make_c_encoder() -> Any:
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - Pythons without the C accelerator
        return None
    try:
        encode = make(
            None,
            _ENCODER.default,
            json.encoder.encode_basestring,
            None,
            ": ",
            ", ",
            False,
            False,
            True,
        )
        if "".join(encode({"a": [1, "é", None]}, 0)) != _ENCODER.encode({"a": [1, "é", None]}):
            return None  # pragma: no cover - a C encoder that does not match json.dumps
        return encode
    except TypeError:  # pragma: no cover - another signature in a future Python
        return None


_C_ENCODE = _make_c_encoder()


def _json_dumps(value: Any) -> str:
    """JSON text as Jinja's ``tojson`` prints it (no ASCII escaping, default separators)."""
    if _C_ENCODE is not None:
        return "".join(_C_ENCODE(value, 0))
    return _ENCODER.encode(value)  # pragma: no cover - Pythons without the C accelerator


@dataclass(slots=True)
class ToolCall:
    """An assistant tool call: an OpenAI function call or a code-interpreter call.

    ``arguments`` is the parsed JSON value; ``arguments_json`` the JSON text
    (the caller's own string when arguments came as a string).
    For ``type == "code_interpreter"`` the code is in ``code`` and ``name`` is
    ``"code_interpreter"``.
    """

    type: Literal["function", "code_interpreter"]
    name: str
    arguments: Any = None
    arguments_json: str = "{}"
    arguments_given_as_string: bool = False
    id: str | None = None
    code: str | None = None

    @property
    def is_code(self) -> bool:
        return self.type == "code_interpreter"

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.id is not None:
            out["id"] = self.id
        if self.is_code:
            out["type"] = "code_interpreter"
            out["code_interpreter"] = {"input": self.code or ""}
        else:
            out["type"] = "function"
            out["function"] = {"name": self.name, "arguments": self.arguments_json}
        return out


@dataclass(slots=True)
class Message:
    """One validated message. ``role`` is canonical; ``source_role`` is what the caller wrote.

    Validated objects are private copies and are treated as read-only (not frozen only
    because frozen dataclasses cost ~0.7 µs more per object on the rendering hot path).
    """

    role: Role
    content: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    source_role: str = ""
    index: int = 0

    @property
    def text(self) -> str:
        """Content as a string (``""`` for ``None``)."""
        return self.content or ""

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.reasoning_content is not None:
            out["reasoning_content"] = self.reasoning_content
        return out


@dataclass(slots=True)
class Tool:
    """A tool offered to the model: an OpenAI function tool or the code interpreter.

    ``raw`` is the caller's tool object itself (read, never written: copying every tool
    schema on every request costs more than rendering), so templates that print the tool
    as JSON print exactly what was given. Read-only by convention, like :class:`Message`.
    """

    type: Literal["function", "code_interpreter"]
    name: str
    description: str | None = None
    parameters: Any = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    #: Position in the ``tools`` list (for error messages).
    index: int = 0
    _json: str | None = field(default=None, repr=False, compare=False)

    @property
    def json(self) -> str:
        """``raw`` as JSON text, exactly as Jinja's ``tojson`` prints it (no ASCII escaping)."""
        text = self._json
        if text is None:
            try:
                text = _json_dumps(self.raw)
            except (TypeError, ValueError, RecursionError) as exc:
                raise ValidationError(
                    f"not JSON-serializable ({type(exc).__name__}: {exc})",
                    field=f"tools[{self.index}]",
                ) from None
            _check_text(text, None, f"tools[{self.index}]")
            self._json = text
        return text

    @property
    def function(self) -> dict[str, Any]:
        """The ``function`` object of the tool (a fresh copy)."""
        return copy.deepcopy(dict(self.raw.get("function", {})))


@dataclass(slots=True)
class Conversation:
    """Validated messages and tools, ready for any template (read-only by convention)."""

    messages: tuple[Message, ...]
    tools: tuple[Tool, ...] = ()

    @property
    def function_tools(self) -> tuple[Tool, ...]:
        return tuple(t for t in self.tools if t.type == "function")

    @property
    def has_code_interpreter(self) -> bool:
        return any(t.type == "code_interpreter" for t in self.tools)

    def split_system(self) -> tuple[Message | None, list[Message]]:
        """The leading system message (``None`` when there is none) and the other messages."""
        msgs = list(self.messages)
        if msgs and msgs[0].role == "system":
            return msgs[0], msgs[1:]
        return None, msgs

    def __len__(self) -> int:
        return len(self.messages)


def _as_mapping(obj: Any, index: int) -> Mapping[str, Any]:
    if type(obj) is dict or isinstance(obj, Mapping):
        return obj
    for attr in ("model_dump", "dict", "to_dict"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            value = fn()
            if isinstance(value, Mapping):
                return value
    if isinstance(obj, Message):
        return obj.to_openai()
    raise ValidationError(
        f"expected a message object (dict with 'role'), got {type(obj).__name__}", index=index
    )


def _content_text(content: Any, index: int) -> str | None:
    if content is None or type(content) is str:
        return content
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
                continue
            if not isinstance(part, Mapping):
                raise ValidationError(
                    f"content part must be an object, got {type(part).__name__}",
                    index=index,
                    field=f"content[{j}]",
                )
            ptype = part.get("type", "text")
            if ptype != "text":
                raise ValidationError(
                    f"unsupported content part type {ptype!r} (only 'text' parts are accepted)",
                    index=index,
                    field=f"content[{j}].type",
                )
            text = part.get("text")
            if not isinstance(text, str):
                raise ValidationError(
                    "text part needs a string 'text'", index=index, field=f"content[{j}].text"
                )
            texts.append(text)
        return "".join(texts)
    raise ValidationError(
        f"content must be a string, null or a list of text parts, got {type(content).__name__}",
        index=index,
        field="content",
    )


def _str_field(value: Any, index: int, key: str) -> str:
    """A present optional string field (``name``, ``tool_call_id``, …), checked."""
    if isinstance(value, str):
        _check_text(value, index, key)
        return value
    raise ValidationError(f"must be a string, got {type(value).__name__}", index=index, field=key)


def _call_field(j: int, path: str) -> str:
    return f"tool_calls[{j}]{path}"


def _tool_call(raw: Any, index: int, j: int) -> ToolCall:
    if type(raw) is not dict:
        raw = _as_mapping(raw, index)
    call_id = raw.get("id")
    if call_id is not None:
        if not isinstance(call_id, str):
            raise ValidationError("must be a string", index=index, field=_call_field(j, ".id"))
        if not call_id.isascii():
            _check_text(call_id, index, _call_field(j, ".id"))
    ctype = raw.get("type", "function")
    if ctype != "function":
        return _code_call(raw, ctype, call_id, index, j)
    fn = raw.get("function")
    if type(fn) is not dict and not isinstance(fn, Mapping):
        raise ValidationError(
            "missing 'function' object", index=index, field=_call_field(j, ".function")
        )
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ValidationError(
            "function name must be a non-empty string",
            index=index,
            field=_call_field(j, ".function.name"),
        )
    if not name.isascii():
        _check_text(name, index, _call_field(j, ".function.name"))
    args = fn.get("arguments")
    if args is None:
        args = {}
    if isinstance(args, str):
        return _string_arguments_call(name, args, call_id, index, j)
    try:
        text = _json_dumps(args)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ValidationError(
            f"arguments is not JSON-serializable ({reason})",
            index=index,
            field=_call_field(j, ".function.arguments"),
        ) from None
    if not text.isascii():
        _check_text(text, index, _call_field(j, ".function.arguments"))
    # The caller's object is referenced, not copied: validated objects are read-only.
    return ToolCall("function", name, args, text, False, call_id)


def _string_arguments_call(
    name: str, args: str, call_id: str | None, index: int, j: int
) -> ToolCall:
    """A function call whose arguments came as JSON text (kept verbatim, checked by parsing)."""
    where = _call_field(j, ".function.arguments")
    text = args if args.strip() else "{}"
    _check_text(text, index, where)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"arguments is not valid JSON ({exc.msg} at char {exc.pos})", index=index, field=where
        ) from None
    except RecursionError:
        raise ValidationError(
            "arguments JSON is nested too deeply", index=index, field=where
        ) from None
    return ToolCall("function", name, parsed, args, True, call_id)


def _code_call(
    raw: Mapping[str, Any], ctype: Any, call_id: str | None, index: int, j: int
) -> ToolCall:
    """A ``code_interpreter`` call (any other type is rejected)."""
    if ctype != "code_interpreter":
        raise ValidationError(
            f"unknown tool call type {ctype!r} (expected 'function' or 'code_interpreter')",
            index=index,
            field=_call_field(j, ".type"),
        )
    ci = raw.get("code_interpreter")
    if not isinstance(ci, Mapping) or not isinstance(ci.get("input"), str):
        raise ValidationError(
            "code_interpreter call needs {'input': CODE}",
            index=index,
            field=_call_field(j, ".code_interpreter.input"),
        )
    code = ci["input"]
    _check_text(code, index, _call_field(j, ".code_interpreter.input"))
    return ToolCall(
        type="code_interpreter",
        name="code_interpreter",
        id=call_id,
        code=code,
        arguments={"code": code},
        arguments_json=_json_dumps({"code": code}),
    )


#: Message keys read by validation (a message with only these skips the near-miss check).
_KNOWN_KEYS = frozenset(
    ("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content", "reasoning")
)

#: Roles whose message needs nothing but a string content (the fast path).
_PLAIN_ROLES = {k: v for k, v in ROLE_ALIASES.items() if k != "function"}


def validate_message(obj: Any, index: int) -> Message:
    """Validate one message (without cross-message rules)."""
    if type(obj) is dict and len(obj) == 2:
        # Fast path for the common {"role": ..., "content": "..."} message.
        role_in = obj.get("role")
        content = obj.get("content")
        if type(content) is str and type(role_in) is str and role_in in _PLAIN_ROLES:
            return Message(_PLAIN_ROLES[role_in], content, None, (), None, None, role_in, index)  # type: ignore[arg-type]
    if type(obj) is dict:
        m: Mapping[str, Any] = obj
    elif isinstance(obj, Message):
        return obj if obj.index == index else dataclasses.replace(obj, index=index)
    else:
        m = _as_mapping(obj, index)
    if not m.keys() <= _KNOWN_KEYS:  # extra keys are ignored, but not near-misses
        for key, reason in _WRONG_KEYS.items():
            if m.get(key) is not None:
                raise ValidationError(reason, index=index, field=key)
    role_in = m.get("role")
    if not isinstance(role_in, str):
        raise ValidationError("missing or non-string 'role'", index=index, field="role")
    role = ROLE_ALIASES.get(role_in)
    if role is None:
        raise ValidationError(
            f"unknown role {role_in!r} (expected one of: {', '.join(sorted(ROLE_ALIASES))})",
            index=index,
            field="role",
        )
    content = _content_text(m.get("content"), index)
    name = m.get("name")
    if name is not None:
        name = _str_field(name, index, "name")
    reasoning = m.get("reasoning_content")
    if reasoning is not None:
        reasoning = _str_field(reasoning, index, "reasoning_content")
    elif isinstance(m.get("reasoning"), str):
        reasoning = _str_field(m["reasoning"], index, "reasoning")
    tool_call_id = m.get("tool_call_id")
    if tool_call_id is not None:
        tool_call_id = _str_field(tool_call_id, index, "tool_call_id")
    raw_calls = m.get("tool_calls")
    calls: tuple[ToolCall, ...] = ()
    if raw_calls is not None:
        if type(raw_calls) is not list and (
            not isinstance(raw_calls, Sequence) or isinstance(raw_calls, (str, bytes))
        ):
            raise ValidationError(
                f"tool_calls must be a list or null, got {type(raw_calls).__name__}",
                index=index,
                field="tool_calls",
            )
        if raw_calls and role != "assistant":
            raise ValidationError(
                f"only assistant messages may have tool_calls (role is {role_in!r})",
                index=index,
                field="tool_calls",
            )
        if len(raw_calls) == 1:  # the common case, without the generator machinery
            calls = (_tool_call(raw_calls[0], index, 0),)
        else:
            calls = tuple([_tool_call(c, index, j) for j, c in enumerate(raw_calls)])
    if role == "tool" and role_in in ("function",) and name is None:
        raise ValidationError("a 'function' message needs a 'name'", index=index, field="name")
    if reasoning is not None and role != "assistant":
        raise ValidationError(
            "only assistant messages may have reasoning_content",
            index=index,
            field="reasoning_content",
        )
    if tool_call_id is not None and role != "tool":
        raise ValidationError(
            "only tool messages may have tool_call_id", index=index, field="tool_call_id"
        )
    return Message(role, content, name, calls, tool_call_id, reasoning, role_in, index)  # type: ignore[arg-type]


def validate_tools(tools: Iterable[Any] | None) -> tuple[Tool, ...]:
    """Validate OpenAI tools (``function`` and ``code_interpreter``)."""
    if tools is None:
        return ()
    if type(tools) is not list and (
        isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable)
    ):
        raise ValidationError(
            f"tools must be a list of tool objects, got {type(tools).__name__}", field="tools"
        )
    out = []
    for i, raw in enumerate(tools):
        if type(raw) is not dict:
            if isinstance(raw, Tool):
                out.append(raw)
                continue
            if not isinstance(raw, Mapping):
                raise ValidationError(
                    f"must be an object, got {type(raw).__name__}", field=f"tools[{i}]"
                )
        ttype = raw.get("type", "function")
        if ttype == "function":
            out.append(_function_tool(raw, i))
        elif ttype == "code_interpreter":
            out.append(Tool(type="code_interpreter", name="code_interpreter", raw=raw, index=i))
        else:
            raise ValidationError(
                f"unknown tool type {ttype!r} (expected 'function' or 'code_interpreter')",
                field=f"tools[{i}].type",
            )
    return tuple(out)


def _function_tool(raw: Mapping[str, Any], i: int) -> Tool:
    fn = raw.get("function")
    if type(fn) is not dict and not isinstance(fn, Mapping):
        raise ValidationError("missing 'function' object", field=f"tools[{i}].function")
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ValidationError("must be a non-empty string", field=f"tools[{i}].function.name")
    if not name.isascii():
        _check_text(name, None, f"tools[{i}].function.name")
    desc = fn.get("description")
    if desc is not None:
        if not isinstance(desc, str):
            raise ValidationError("must be a string", field=f"tools[{i}].function.description")
        if not desc.isascii():
            _check_text(desc, None, f"tools[{i}].function.description")
    params = fn.get("parameters")
    if params is not None and type(params) is not dict and not isinstance(params, Mapping):
        raise ValidationError(
            "must be a JSON-schema object", field=f"tools[{i}].function.parameters"
        )
    return Tool("function", name, desc, params, raw, i)


def _orphan_tool_result(index: int) -> None:
    raise ValidationError(
        "tool result without a preceding assistant tool call", index=index, field="role"
    )


def validate_conversation(
    messages: Any, tools: Iterable[Any] | None = None, *, require_tool_calls: bool = True
) -> Conversation:
    """Validate messages and tools into a :class:`Conversation`.

    Cross-message rules checked here: a ``tool`` message must answer an earlier
    assistant tool call (by ``tool_call_id`` when one is given). Set
    ``require_tool_calls=False`` for a fragment whose earlier turns live elsewhere
    (e.g. ``sequence_start=False``).
    """
    if type(messages) is not list:
        if isinstance(messages, Conversation):
            if tools is None:
                return messages
            return Conversation(messages.messages, validate_tools(tools))
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
            raise ValidationError("messages must be a list of message objects", field="messages")
        if isinstance(messages, Mapping):
            raise ValidationError(
                "messages must be a list of message objects, got a single object",
                field="messages",
            )
    out: list[Message] = []
    append = out.append
    seen_ids: set[str] = set()
    any_call = False
    plain_roles = _PLAIN_ROLES
    for i, m in enumerate(messages):
        if type(m) is dict and len(m) == 2:  # the common case, inlined: {"role", "content": str}
            try:
                role_in = m["role"]
                role = plain_roles[role_in]
                content = m["content"]
            except (KeyError, TypeError):  # another shape: the general path below says why
                pass
            else:  # role_in is a str (an equal key of plain_roles): only content is checked
                if type(content) is str:
                    if role == "tool" and require_tool_calls and not any_call:
                        _orphan_tool_result(i)
                    append(Message(role, content, None, (), None, None, role_in, i))  # type: ignore[arg-type]
                    continue
        msg = validate_message(m, i)
        if msg.tool_calls:
            any_call = True
            seen_ids.update([c.id for c in msg.tool_calls if c.id])
        elif msg.role == "tool" and require_tool_calls:
            if not any_call:
                _orphan_tool_result(i)
            if msg.tool_call_id is not None and seen_ids and msg.tool_call_id not in seen_ids:
                raise ValidationError(
                    f"tool_call_id {msg.tool_call_id!r} matches no earlier tool call",
                    index=i,
                    field="tool_call_id",
                )
        append(msg)
    return Conversation(tuple(out), () if tools is None else validate_tools(tools))
