"""The Anthropic Messages API's request bodies (``/v1/messages``, ``/v1/messages/count_tokens``),
validated once at the edge (pydantic, strict JSON), with the field names of Anthropic's API.

Blocks the gateway cannot take (images, documents, redacted thinking, server tools) are
declared so that :mod:`.anthropic` can refuse them with a 400 naming the block; other
unknown fields are ignored (``cache_control``, ``citations``, ``service_tier``, …).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from .errors import APIError


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


# ---------------------------------------------------------------------- content blocks
class TextBlock(_Body):
    type: Literal["text"]
    text: str


class ImageBlock(_Body):
    type: Literal["image"]


class DocumentBlock(_Body):
    type: Literal["document"]


class ThinkingBlock(_Body):
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(_Body):
    type: Literal["redacted_thinking"]


class ToolUseBlock(_Body):
    type: Literal["tool_use"]
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: dict[str, Any]


ResultPart = Annotated[TextBlock | ImageBlock | DocumentBlock, Field(discriminator="type")]


class ToolResultBlock(_Body):
    type: Literal["tool_result"]
    tool_use_id: str = Field(min_length=1)
    content: str | list[ResultPart] | None = None
    is_error: bool = False


Block = Annotated[
    TextBlock
    | ImageBlock
    | DocumentBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ToolResultBlock,
    Field(discriminator="type"),
]


class Message(_Body):
    role: Literal["user", "assistant", "system"]
    content: str | list[Block]


# ---------------------------------------------------------------------- tools
class Tool(_Body):
    """A client tool (``type`` ``custom`` or absent); a server tool's ``type`` is refused."""

    name: str = Field(min_length=1, max_length=128)
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    type: str | None = None


class ToolChoiceAuto(_Body):
    type: Literal["auto"]
    disable_parallel_tool_use: bool = False


class ToolChoiceAny(_Body):
    type: Literal["any"]
    disable_parallel_tool_use: bool = False


class ToolChoiceTool(_Body):
    type: Literal["tool"]
    name: str = Field(min_length=1)
    disable_parallel_tool_use: bool = False


class ToolChoiceNone(_Body):
    type: Literal["none"]


ToolChoice = Annotated[
    ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool | ToolChoiceNone, Field(discriminator="type")
]


# ---------------------------------------------------------------------- thinking, output
class ThinkingEnabled(_Body):
    type: Literal["enabled"]
    #: Accepted, not enforced on its own: ``max_tokens`` bounds thinking and answer together.
    budget_tokens: int = Field(ge=1)


class ThinkingDisabled(_Body):
    type: Literal["disabled"]


class ThinkingAdaptive(_Body):
    type: Literal["adaptive"]


Thinking = Annotated[
    ThinkingEnabled | ThinkingDisabled | ThinkingAdaptive, Field(discriminator="type")
]


class JSONOutputFormat(_Body):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class OutputConfig(_Body):
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    format: JSONOutputFormat | None = None


class Metadata(_Body):
    user_id: str | None = None


# ---------------------------------------------------------------------- bodies
class CountTokensBody(_Body):
    """``POST /v1/messages/count_tokens``: what the prompt of a message request holds."""

    model: str
    messages: list[Message] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    output_config: OutputConfig | None = None


class MessagesBody(CountTokensBody):
    """``POST /v1/messages``."""

    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = None
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    stream: bool = False
    metadata: Metadata | None = None
    # Declared to be refused when set: hosted features a local engine does not have.
    container: Any = None
    mcp_servers: Any = None


def unsupported(body: MessagesBody) -> APIError | None:
    """A 400 for a field the gateway cannot honour (never silently ignored)."""
    for name in ("container", "mcp_servers"):
        if getattr(body, name) is not None:
            return APIError(
                400, f"{name}: not supported by chatfmt (a hosted Anthropic feature)", param=name
            )
    return None


def parse_body(model: type[_Body], raw: bytes) -> Any:
    """The validated body, or a 400 :class:`APIError` naming the first bad field
    (``messages[0].content[1].input``)."""
    try:
        return model.model_validate_json(raw)
    except PydanticError as exc:
        errors = exc.errors(include_url=False)
        # A union (``str | list[Block]``) fails in each branch: the deepest error is the one
        # of the branch the client meant.
        error = max(errors, key=lambda e: len(e["loc"]))
        if error["type"] == "json_invalid":
            raise APIError(400, f"the body is not valid JSON: {error['msg']}") from None
        if error["type"] == "model_type" and not error["loc"]:
            raise APIError(400, "the body must be a JSON object") from None
        param = _loc(error["loc"])
        raise APIError(400, f"{param}: {error['msg']}", param=param) from None


#: Union branches pydantic names in a location.
_BRANCHES = ("str", "int", "bool", "float", "none")
#: Fields whose value is a union told apart by ``type``: pydantic's location names the tag next.
_TAGGED = ("tool_choice", "thinking")
#: Lists of blocks told apart by ``type``: the location names the tag after the index.
_BLOCK_LISTS = ("content",)


def _loc(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a field path, without union branches and tags:
    ``('messages', 0, 'content', 'list[…]', 1, 'tool_use', 'input')`` →
    ``messages[0].content[1].input``."""
    parts = [p for p in loc if isinstance(p, int) or ("[" not in p and p not in _BRANCHES)]
    out = ""
    skip = False
    for i, part in enumerate(parts):
        if skip:
            skip = False
            continue
        if isinstance(part, int):
            out += f"[{part}]"
            skip = i > 0 and parts[i - 1] in _BLOCK_LISTS
        else:
            out += f".{part}" if out else part
            skip = part in _TAGGED
    return out
