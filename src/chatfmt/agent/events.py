"""What an agent run reports: typed stream events, its steps, and the final return.

The text, reasoning and tool-call events are the stream parser's own deltas
(:mod:`chatfmt.parsing.deltas`): ``TextDelta`` is :class:`~chatfmt.parsing.ContentDelta`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..parsing.deltas import ContentDelta, ReasoningDelta, ToolCallDelta

__all__ = [
    "AgentEvent",
    "AgentFinish",
    "AgentReturn",
    "AgentStep",
    "Final",
    "ReasoningDelta",
    "TextDelta",
    "ToolCallDelta",
    "ToolResult",
    "ToolStart",
]

#: How a run ended: the model answered (``stop``), hit its token limit (``length``),
#: used up ``max_turn`` model calls while still calling tools (``max_turn``), or repeated
#: a malformed tool call after being told it was malformed (``invalid_call``).
AgentFinish = Literal["stop", "length", "max_turn", "invalid_call"]


#: Answer text as the model writes it: the parser's own delta (``.text``).
TextDelta = ContentDelta


@dataclass(frozen=True)
class ToolStart:
    """A tool (or the code interpreter) is about to run."""

    call_id: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class ToolResult:
    """A tool's (or the interpreter's) result, as the model will read it."""

    call_id: str
    name: str
    content: str
    error: bool = False
    images: tuple[Path, ...] = ()


@dataclass
class AgentStep:
    """One model call and what followed it."""

    prompt: str
    message: dict[str, Any]
    finish_reason: str
    observations: list[ToolResult] = field(default_factory=list)
    trailing_text: str = ""


@dataclass
class AgentReturn:
    """The result of :meth:`Agent.chat`.

    ``messages`` is the whole conversation (the input plus every assistant and tool
    message), valid input for the next call. ``answer`` is the final assistant text.
    """

    messages: list[dict[str, Any]]
    steps: list[AgentStep]
    answer: str | None
    finish_reason: AgentFinish
    reasoning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (paths as strings)."""
        return _jsonable(asdict(self))


@dataclass(frozen=True)
class Final:
    """The last event of a stream: the whole :class:`AgentReturn`."""

    result: AgentReturn


AgentEvent = ContentDelta | ReasoningDelta | ToolCallDelta | ToolStart | ToolResult | Final


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
