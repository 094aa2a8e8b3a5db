"""What the parsers produce: typed stream deltas and the message they add up to.

A :class:`StreamParser` emits :data:`Delta` objects — :class:`ContentDelta`,
:class:`ReasoningDelta`, :class:`ToolCallDelta` — and :func:`merge_deltas` folds
them into a :class:`ParsedMessage`. OpenAI's wire shapes (``chat.completion.chunk``
deltas, message dicts) are made from these in one place, :mod:`.openai_wire`; a
:class:`ParsedMessage` also is its OpenAI message (a read-only ``dict``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import MISSING, dataclass, field, make_dataclass
from dataclasses import fields as dataclass_fields
from typing import Any, Literal

#: How a message ended: at its end (``stop``), with tool calls, or cut off at the token limit.
FinishReason = Literal["stop", "tool_calls", "length"]

#: The name of every code-interpreter call.
CODE_INTERPRETER = "code_interpreter"


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Answer text as the model writes it."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning text as the model writes it."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of tool call ``index``: the first piece has ``id`` and ``name``.

    ``text`` is argument JSON text (function calls) or code (code-interpreter calls,
    ``code=True``, named ``"code_interpreter"``). ``error`` flags the call invalid
    (unknown tool, arguments that are not a JSON object, a call cut off); the text
    written so far stays its arguments.
    """

    index: int
    text: str = ""
    id: str | None = None
    name: str | None = None
    code: bool = False
    error: str | None = None


#: One stream delta.
Delta = ContentDelta | ReasoningDelta | ToolCallDelta


# The emitter makes one delta per feed or so: these build the same objects as the
# dataclass constructors, without the frozen ``__init__`` (which sets each field through
# ``object.__setattr__``, several times slower than a dict display).
_new = object.__new__
_set_content = ContentDelta.__dict__["text"].__set__
_set_reasoning = ReasoningDelta.__dict__["text"].__set__


def content_delta(text: str) -> ContentDelta:
    """``ContentDelta(text)``, made faster."""
    delta = _new(ContentDelta)
    _set_content(delta, text)
    return delta


def reasoning_delta(text: str) -> ReasoningDelta:
    """``ReasoningDelta(text)``, made faster."""
    delta = _new(ReasoningDelta)
    _set_reasoning(delta, text)
    return delta


def _draft_of(cls: type) -> Any:
    """A writable class with the slots (the memory layout) of frozen dataclass ``cls``:
    a draft filled by its plain ``__init__`` becomes a ``cls`` by assigning ``__class__``."""
    fields = [
        (f.name, f.type) if f.default is MISSING else (f.name, f.type, field(default=f.default))
        for f in dataclass_fields(cls)
    ]
    return make_dataclass(f"_{cls.__name__}Draft", fields, slots=True, eq=False, repr=False)


_CallDraft = _draft_of(ToolCallDelta)


def call_delta(
    index: int, text: str, call_id: str | None, name: str | None, code: bool
) -> ToolCallDelta:
    """``ToolCallDelta(index, text, call_id, name, code)`` (no error), made faster."""
    delta = _CallDraft(index, text, call_id, name, code)
    delta.__class__ = ToolCallDelta
    return delta


@dataclass(frozen=True, slots=True)
class ParsedToolCall:
    """One tool call of a parsed message.

    ``arguments`` is the argument JSON text as written (for a code-interpreter call,
    ``code=True``: its code); ``error`` says why the call is invalid, if it is.
    """

    id: str
    name: str
    arguments: str
    code: bool = False
    error: str | None = None


def _read_only(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise TypeError("a ParsedMessage is read-only (to_openai() gives a plain dict)")


@dataclass(frozen=True, slots=True, eq=False)
class ParsedMessage(dict[str, Any]):
    """A parsed assistant message, and how the output ended.

    Typed fields, and at the same time a read-only ``dict`` that is exactly the OpenAI
    assistant message (``msg["content"]``, ``msg["tool_calls"][0]["function"]``,
    ``json.dumps(msg)``; ``==`` compares that message only, also with a plain
    ``dict``). :meth:`to_openai` returns it as a new plain ``dict``.

    ``content`` is ``None`` when there is none (or only whitespace next to tool calls).
    ``finish_reason``: ``"length"`` when the output was cut off (``truncated=True``) and
    no end-of-turn marker was seen, else ``"tool_calls"`` when the message has tool
    calls, else ``"stop"``. ``trailing_text``: what the model wrote after its
    end-of-turn marker (``""`` when nothing) — never content.
    """

    content: str | None
    reasoning_content: str | None = None
    tool_calls: tuple[ParsedToolCall, ...] = ()
    finish_reason: FinishReason = "stop"
    trailing_text: str = ""

    def __post_init__(self) -> None:
        from .openai_wire import message_dict

        dict.update(self, message_dict(self))

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI assistant message as a new plain ``dict`` (error flags included)."""
        from .openai_wire import message_dict

        return message_dict(self)

    as_message = to_openai

    def __reduce__(self) -> Any:
        return (
            ParsedMessage,
            (
                self.content,
                self.reasoning_content,
                self.tool_calls,
                self.finish_reason,
                self.trailing_text,
            ),
        )

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only


def merge_deltas(
    deltas: Iterable[Delta],
    *,
    finish_reason: FinishReason | None = None,
    trailing_text: str = "",
) -> ParsedMessage:
    """Fold stream deltas into one :class:`ParsedMessage`.

    ``content`` is the concatenated content (``None`` when there is none, or when it
    is only whitespace next to tool calls); an invalid tool call keeps its raw text as
    arguments and carries ``error``. ``finish_reason`` defaults to ``"tool_calls"``
    when there are calls, else ``"stop"``.
    """
    content: list[str] = []
    reasoning: list[str] = []
    heads: dict[int, ToolCallDelta] = {}
    pieces: dict[int, list[str]] = {}  # argument / code text per call, joined once at the end
    errors: dict[int, str] = {}
    for delta in deltas:
        if isinstance(delta, ContentDelta):
            content.append(delta.text)
        elif isinstance(delta, ReasoningDelta):
            reasoning.append(delta.text)
        elif isinstance(delta, ToolCallDelta):
            index = delta.index
            if index not in heads:
                heads[index] = delta
                pieces[index] = []
            if delta.text:
                pieces[index].append(delta.text)
            if delta.error is not None:
                errors[index] = delta.error
        else:
            raise TypeError(f"not a parser delta: {delta!r}")
    calls = tuple(
        ParsedToolCall(
            heads[i].id or "",
            heads[i].name or "",
            "".join(pieces[i]),
            heads[i].code,
            errors.get(i),
        )
        for i in sorted(heads)
    )
    text = "".join(content)
    return ParsedMessage(
        None if not text or (calls and not text.strip()) else text,
        "".join(reasoning) or None,
        calls,
        finish_reason or ("tool_calls" if calls else "stop"),
        trailing_text,
    )
