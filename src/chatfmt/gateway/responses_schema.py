"""The body of ``POST /v1/responses`` (OpenAI's Responses API, the Open Responses standard),
validated once at the edge (pydantic, strict JSON).

Input items and tools are tagged unions on ``type``; a type the gateway does not serve
(hosted tools, images, files, …) is parsed as :class:`Unsupported` so that the translation
(:mod:`.responses`) answers a 400 naming it and saying why, rather than pydantic's list of
every type it expected.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from .schema import JSONObjectFormat, TextFormat


class _Body(BaseModel):
    # Unknown fields are ignored (clients send ``user``, ``service_tier``, …); the fields the
    # gateway cannot honour are declared and refused when set (see ``responses.refused``).
    model_config = ConfigDict(extra="ignore", strict=True)


def _tag(value: Any, known: frozenset[str], default: str | None = None) -> str:
    """The union tag of ``value``: its ``type`` when known, else ``unsupported``."""
    kind = value.get("type", default) if isinstance(value, dict) else None
    return kind if kind in known else "unsupported"


class Unsupported(_Body):
    """A content part, item or tool of a type the gateway does not serve."""

    model_config = ConfigDict(extra="allow")
    type: Any = None


# ---------------------------------------------------------------------- content parts
class InputText(_Body):
    type: Literal["input_text"]
    text: str


class OutputText(_Body):
    type: Literal["output_text"]
    text: str


class Refusal(_Body):
    type: Literal["refusal"]
    refusal: str


class SummaryText(_Body):
    type: Literal["summary_text"]
    text: str


class ReasoningText(_Body):
    type: Literal["reasoning_text"]
    text: str


_PART_TYPES = frozenset({"input_text", "output_text", "refusal"})

ContentPart = Annotated[
    Annotated[InputText, Tag("input_text")]
    | Annotated[OutputText, Tag("output_text")]
    | Annotated[Refusal, Tag("refusal")]
    | Annotated[Unsupported, Tag("unsupported")],
    Discriminator(lambda v: _tag(v, _PART_TYPES)),
]


def _shape(value: Any) -> str:
    """The branch of a string-or-list (or string-or-object) field a value is validated by,
    so that an error names the value's own problem, not every branch's."""
    if isinstance(value, str):
        return "as_string"
    return "as_list" if isinstance(value, list) else "as_object"


def _either(expected: str) -> Discriminator:
    """:func:`_shape` as a discriminator whose error says what was ``expected``."""
    return Discriminator(
        _shape, custom_error_type="invalid_type", custom_error_message=f"must be {expected}"
    )


#: A message's content: a string, or content parts.
Content = Annotated[
    Annotated[str, Tag("as_string")] | Annotated[list[ContentPart], Tag("as_list")],
    _either("a string or a list of content parts"),
]


# ---------------------------------------------------------------------- input items
class MessageItem(_Body):
    """A message: ``{"role", "content"}`` (``type`` optional), content a string or parts."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: Content
    id: str | None = None
    status: str | None = None
    phase: str | None = None


class FunctionCallItem(_Body):
    """A function call the model made (a reply of this gateway, sent back)."""

    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str
    id: str | None = None
    status: str | None = None


class FunctionCallOutputItem(_Body):
    """The result of a function call: a string, or text parts."""

    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: Content
    id: str | None = None
    status: str | None = None


class ReasoningItem(_Body):
    """Reasoning the model wrote: its text (``content``) and/or a ``summary``."""

    type: Literal["reasoning"]
    summary: list[SummaryText] = Field(default_factory=list)
    content: list[ReasoningText] | None = None
    id: str | None = None
    encrypted_content: str | None = None
    status: str | None = None


_ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning"})

InputItem = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[ReasoningItem, Tag("reasoning")]
    | Annotated[Unsupported, Tag("unsupported")],
    Discriminator(lambda v: _tag(v, _ITEM_TYPES, default="message")),
]


# ---------------------------------------------------------------------- tools
class FunctionTool(_Body):
    """A function tool in the Responses API's flat form."""

    type: Literal["function"]
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


Tool = Annotated[
    Annotated[FunctionTool, Tag("function")] | Annotated[Unsupported, Tag("unsupported")],
    Discriminator(lambda v: _tag(v, frozenset({"function"}))),
]


class FunctionChoice(_Body):
    type: Literal["function"]
    name: str = Field(min_length=1)


class AllowedTools(_Body):
    """``{"type": "allowed_tools", "mode": "auto"|"required", "tools": [...]}``."""

    type: Literal["allowed_tools"]
    mode: Literal["auto", "required", "none"] = "auto"
    tools: list[dict[str, Any]]


ToolChoiceObject = Annotated[
    Annotated[FunctionChoice, Tag("function")]
    | Annotated[AllowedTools, Tag("allowed_tools")]
    | Annotated[Unsupported, Tag("unsupported")],
    Discriminator(lambda v: _tag(v, frozenset({"function", "allowed_tools"}))),
]

ToolChoice = Annotated[
    Annotated[Literal["auto", "none", "required"], Tag("as_string")]
    | Annotated[ToolChoiceObject, Tag("as_object")],
    _either("'auto', 'none', 'required' or an object"),
]


# ---------------------------------------------------------------------- text, reasoning
class JSONSchemaTextFormat(_Body):
    """``text.format`` ``json_schema`` (flat: ``name``, ``schema``, ``strict`` beside ``type``)."""

    type: Literal["json_schema"]
    name: str = Field(min_length=1, max_length=64)
    description: str | None = None
    # ``schema`` is checked when the constraint is compiled (a 400 naming its part).
    schema_: Any = Field(default=None, alias="schema")
    strict: bool | None = None


TextFormatParam = Annotated[
    TextFormat | JSONObjectFormat | JSONSchemaTextFormat, Field(discriminator="type")
]


class TextParam(_Body):
    format: TextFormatParam | None = None
    verbosity: str | None = None


class ReasoningParam(_Body):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    summary: str | None = None
    generate_summary: str | None = None


# ---------------------------------------------------------------------- the body
class ResponsesBody(_Body):
    """``POST /v1/responses``."""

    model: str
    input: (
        Annotated[
            Annotated[str, Tag("as_string")] | Annotated[list[InputItem], Tag("as_list")],
            _either("a string or a list of input items"),
        ]
        | None
    ) = None
    instructions: str | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    text: TextParam | None = None
    reasoning: ReasoningParam | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    #: Not in OpenAI's API (engines such as vLLM accept them): stop sequences, a seed.
    stop: str | list[str] | None = None
    seed: int | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = True
    stream: bool | None = False
    previous_response_id: str | None = None
    truncation: Literal["auto", "disabled"] | None = None
    include: list[str] | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    # Declared to be refused when set (see ``responses.refused``).
    background: bool | None = None
    conversation: Any = None
    prompt: Any = None
    top_logprobs: int | None = None
    max_tool_calls: int | None = None


#: Union branches and tags pydantic puts in an error's location (not fields of the body).
_TAGS = _PART_TYPES | _ITEM_TYPES | {"function", "allowed_tools", "unsupported"}
_SHAPES = frozenset({"as_string", "as_list", "as_object"})


def body_field(loc: tuple[int | str, ...]) -> str:
    """A pydantic location in a Responses body as the field's path:
    ``('input', 'list[…]', 2, 'function_call', 'call_id')`` → ``input[2].call_id``."""
    out = ""
    previous: int | str | None = None
    for part in loc:
        skip = isinstance(part, str) and (
            part in _SHAPES
            or "[" in part
            or (isinstance(previous, int) and part in _TAGS)
            or (previous in _SHAPES and part in _TAGS)
            or (previous == "format" and part in ("text", "json_object", "json_schema"))
        )
        previous = part
        if skip:
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out
