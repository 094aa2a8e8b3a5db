"""Tools from Python functions, and the executor that runs a turn's tool calls.

A tool's JSON schema comes from the function's type hints and docstring (Google,
reST or NumPy style) through pydantic; arguments are validated against it before
the call. Whatever goes wrong (invalid arguments, an exception, a timeout, an
unknown name) becomes the tool's result text for the model, never a crash.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_type_hints

import docstring_parser
import pydantic

from ..errors import ValidationError


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call returned: the text for the model, whether it is an error, and the
    images among its :class:`Attachment` s."""

    call_id: str
    name: str
    content: str
    error: bool = False
    images: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Attachment:
    """An image or a file a tool returns (alone, or in a list with text and other values).

    The model reads it in the tool's result as the code interpreter writes its images, a
    Markdown link on its own line: ``![image](PATH)`` for an image (as in the InternLM2 chat
    format's environment turns), ``[file](PATH)`` for a file. The path is not read or sent.
    """

    path: Path
    kind: Literal["image", "file"] = "image"

    def __init__(self, path: str | Path, kind: Literal["image", "file"] = "image") -> None:
        if kind not in ("image", "file"):
            raise ValidationError(f"an attachment is an image or a file, got {kind!r}")
        object.__setattr__(self, "path", Path(path))
        object.__setattr__(self, "kind", kind)

    def markdown(self) -> str:
        """How the model reads it."""
        return f"![image]({self.path})" if self.kind == "image" else f"[file]({self.path})"


def is_tool_name(name: str) -> bool:
    """An identifier, or identifiers joined by dots (a toolkit's API: ``Calculator.add``).

    Whether a template's tool-call format can write the name is the template's to say (see
    :class:`~chatfmt.agent.Agent`)."""
    return bool(name) and all(part.isidentifier() for part in name.split("."))


class FunctionTool:
    """A Python function (sync or async) offered to the model as an OpenAI function tool.

    The JSON schema comes from the type hints and docstring; ``parameters`` publishes a
    schema of your own instead (arguments are still checked against the signature).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(fn):
            raise ValidationError(f"a tool must be a function, got {type(fn).__name__}")
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", ""))
        if not is_tool_name(self.name):
            raise ValidationError(
                "tool name must be an identifier or identifiers joined by dots "
                f"(a toolkit's API, as Calculator.add), got {self.name!r}"
            )
        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        summary = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
        self.description = description if description is not None else summary
        self.is_async = inspect.iscoroutinefunction(fn)
        self._model = _arguments_model(
            fn, self.name, {p.arg_name: p.description for p in doc.params}
        )
        self.parameters = (
            dict(parameters)
            if parameters is not None
            else _clean_schema(self._model.model_json_schema())
        )

    def openai(self) -> dict[str, Any]:
        """The OpenAI tool definition (``{"type": "function", "function": {...}}``)."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = self.parameters
        return {"type": "function", "function": function}

    def validate(self, arguments: Any) -> dict[str, Any]:
        """The arguments checked and converted by the schema; raises ValidationError naming the field."""
        if not isinstance(arguments, Mapping):
            raise ValidationError(
                f"arguments must be a JSON object, got {type(arguments).__name__}",
                field=self.name,
            )
        try:
            model = self._model.model_validate(dict(arguments))
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ValidationError(f"invalid arguments: {problems}", field=self.name) from None
        return {key: getattr(model, key) for key in type(model).model_fields}

    async def acall(self, arguments: Any) -> Any:
        """Validate ``arguments`` and call the function (a sync one runs in a worker thread)."""
        kwargs = self.validate(arguments)
        if self.is_async:
            return await self.fn(**kwargs)
        return await asyncio.to_thread(self.fn, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r})"


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Any:
    """Decorator: ``@tool`` or ``@tool(name=..., description=...)`` turns a function into a FunctionTool."""
    if fn is None:
        return lambda f: FunctionTool(f, name=name, description=description, parameters=parameters)
    return FunctionTool(fn, name=name, description=description, parameters=parameters)


def as_tools(items: Iterable[FunctionTool | Callable[..., Any]]) -> list[FunctionTool]:
    """Functions or FunctionTools as FunctionTools; two tools with one name are refused."""
    out: list[FunctionTool] = []
    seen: set[str] = set()
    for item in items:
        t = item if isinstance(item, FunctionTool) else FunctionTool(item)
        if t.name in seen:
            raise ValidationError(f"two tools are named {t.name!r}")
        seen.add(t.name)
        out.append(t)
    return out


def _arguments_model(
    fn: Callable[..., Any], name: str, descriptions: Mapping[str, str | None]
) -> type[pydantic.BaseModel]:
    """A pydantic model of the function's parameters (``*args``/``**kwargs`` are not tool inputs)."""
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        hints = {}
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise ValidationError(
                f"parameter {param.name!r} is positional-only; tools are called by keyword",
                field=name,
            )
        annotation = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            annotation,
            pydantic.Field(default, description=descriptions.get(param.name) or None),
        )
    config = pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    return pydantic.create_model(f"{name}_arguments", __config__=config, **fields)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema without the generated titles (models read names and descriptions)."""
    schema.pop("title", None)
    for prop in (schema.get("properties") or {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def result_text(value: Any) -> str:
    """A tool's return value as text for the model (strings as they are, :class:`Attachment` s
    as Markdown links, the rest as JSON; a list holding attachments one item per line)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Attachment):
        return value.markdown()
    if isinstance(value, (list, tuple)) and any(isinstance(v, Attachment) for v in value):
        return "\n".join(result_text(v) for v in value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _images(value: Any) -> tuple[Path, ...]:
    """The paths of the image attachments in a tool's return value."""
    items = value if isinstance(value, (list, tuple)) else (value,)
    return tuple(v.path for v in items if isinstance(v, Attachment) and v.kind == "image")


class ToolExecutor:
    """Runs tool calls: validated, with a per-call timeout, concurrently, results in call order.

    ``timeout`` (seconds) bounds each call. A sync function that overruns keeps its
    worker thread until it returns (Python cannot stop a thread); the model gets the
    timeout result at once.
    """

    def __init__(
        self, tools: Iterable[FunctionTool | Callable[..., Any]] = (), *, timeout: float = 30.0
    ) -> None:
        self.tools = {t.name: t for t in as_tools(tools)}
        self.timeout = timeout

    def definitions(self) -> list[dict[str, Any]]:
        """The OpenAI tool definitions, for rendering."""
        return [t.openai() for t in self.tools.values()]

    async def run_one(self, call_id: str, name: str, arguments: Any) -> ToolOutcome:
        """Run one call; every failure is an error outcome with a message for the model."""
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            return ToolOutcome(
                call_id, name, f"Error: unknown tool {name!r} (tools: {known})", True
            )
        try:
            value = await asyncio.wait_for(tool.acall(arguments), self.timeout)
        except ValidationError as exc:
            return ToolOutcome(call_id, name, f"Error: {exc.reason}", True)
        except asyncio.TimeoutError:
            return ToolOutcome(
                call_id, name, f"Error: {name} timed out after {self.timeout} s", True
            )
        except Exception as exc:
            return ToolOutcome(call_id, name, f"Error: {type(exc).__name__}: {exc}", True)
        return ToolOutcome(call_id, name, result_text(value), images=_images(value))

    async def run(self, calls: Sequence[tuple[str, str, Any]]) -> list[ToolOutcome]:
        """Run ``(call_id, name, arguments)`` calls concurrently; outcomes in call order."""
        jobs: list[Awaitable[ToolOutcome]] = [self.run_one(*call) for call in calls]
        return list(await asyncio.gather(*jobs))
