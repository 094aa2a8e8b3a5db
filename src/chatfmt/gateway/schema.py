"""The request bodies the gateway accepts, validated once at the edge (pydantic, strict JSON).

Messages and tools are checked by :func:`chatfmt.validate_conversation` afterwards, which
names the field of any problem (``messages[2].tool_calls[0].function.arguments``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from .errors import APIError


class _Body(BaseModel):
    # Unknown fields are ignored (clients send e.g. ``user`` or ``metadata``); the fields
    # the gateway cannot honour are declared below and refused when set.
    model_config = ConfigDict(extra="ignore", strict=True)


class StreamOptions(_Body):
    include_usage: bool = False


class FunctionName(_Body):
    name: str = Field(min_length=1)


class NamedToolChoice(_Body):
    type: Literal["function"]
    function: FunctionName


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


class JSONSchemaFormat(_Body):
    name: str = Field(min_length=1, max_length=64)
    description: str | None = None
    # ``schema`` is checked when the constraint is compiled (a 400 naming its part).
    schema_: Any = Field(default=None, alias="schema")
    strict: bool | None = None


class TextFormat(_Body):
    type: Literal["text"]


class JSONObjectFormat(_Body):
    type: Literal["json_object"]


class JSONSchemaResponseFormat(_Body):
    type: Literal["json_schema"]
    json_schema: JSONSchemaFormat


ResponseFormat = Annotated[
    TextFormat | JSONObjectFormat | JSONSchemaResponseFormat, Field(discriminator="type")
]


class RenderBody(_Body):
    """``POST /v1/render``: what the prompt of a chat request would be."""

    model: str
    messages: list[Any]
    tools: list[Any] | None = None
    tool_choice: ToolChoice | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    add_generation_prompt: bool = True


class ChatBody(RenderBody):
    """``POST /v1/chat/completions``."""

    parallel_tool_calls: bool | None = None
    stop: str | list[str] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    repetition_penalty: float | None = Field(default=None, gt=0)
    seed: int | None = None
    n: int | None = Field(default=1, ge=1, le=128)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    response_format: ResponseFormat | None = None
    # Declared to be refused when set (see ``unsupported``).
    logprobs: bool | None = None
    top_logprobs: int | None = None
    functions: list[Any] | None = None
    function_call: Any = None
    chat_template: str | None = None


def unsupported(body: ChatBody) -> APIError | None:
    """A 400 for a field the gateway cannot honour (never silently ignored)."""
    if body.logprobs or body.top_logprobs:
        return APIError(
            400, "logprobs are not supported", param="logprobs", code="unsupported_value"
        )
    if body.chat_template is not None:
        return APIError(
            400,
            "chat completions use the model's own template; a chat_template from the request "
            "is accepted by /v1/render and /v1/parse (with --trust-request-chat-template)",
            param="chat_template",
            code="unsupported_value",
        )
    if body.functions is not None or body.function_call is not None:
        param = "functions" if body.functions is not None else "function_call"
        return APIError(
            400,
            "legacy functions are not supported: use tools",
            param=param,
            code="unsupported_value",
        )
    return None


def response_format_dict(body: ChatBody) -> dict[str, Any] | None:
    """The request's ``response_format`` as the client sent it (``None`` for absent or text)."""
    fmt = body.response_format
    if fmt is None or isinstance(fmt, TextFormat):
        return None
    return fmt.model_dump(by_alias=True, exclude_none=True)


def parse_body(
    model: type[BaseModel], raw: bytes, where: Callable[[tuple[int | str, ...]], str] | None = None
) -> Any:
    """The validated body, or a 400 :class:`APIError` naming the first bad field (``where``:
    a pydantic location as the field's path, default the chat bodies' reading)."""
    try:
        return model.model_validate_json(raw)
    except PydanticError as exc:
        error = exc.errors(include_url=False)[0]
        if error["type"] == "json_invalid":
            raise APIError(400, f"the body is not valid JSON: {error['msg']}") from None
        if error["type"] == "model_type" and not error["loc"]:
            raise APIError(400, "the body must be a JSON object") from None
        param = (where or _loc)(error["loc"])
        raise APIError(400, f"{param}: {error['msg']}", param=param, code="invalid_value") from None


#: Fields whose type is a union: pydantic's location then names the branch, not a field.
_UNION_FIELDS = ("tool_choice", "stop")
#: Fields whose type is a union told apart by ``type``: the location names the tag after the field.
_TAGGED_FIELDS = ("response_format",)


def _loc(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a field path: ``('messages', 2)`` → ``messages[2]``."""
    if loc and loc[0] in _UNION_FIELDS:
        return str(loc[0])
    if loc and loc[0] in _TAGGED_FIELDS:
        loc = loc[:1] + loc[2:]
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out
