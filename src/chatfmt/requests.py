"""What a call asks for besides its input: :class:`RenderRequest` and :class:`ParseRequest`.

A request is built once, where a call enters chatfmt (``chatfmt.render(...)``, the CLI,
the transformers drop-in), and passed unchanged down every render, segments and encode
path. Its keywords are written here only: :meth:`RenderRequest.from_kwargs` turns a
call's ``**kwargs`` into a request (the field names set fields, every other name is a
template option), so the one-line conveniences keep their keywords without copying
them into each signature.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from .errors import ParseError, ValidationError

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_R = TypeVar("_R", bound="_KeywordRequest")


def parse_now(now: _dt.date | _dt.datetime | str | None) -> _dt.datetime | None:
    """The ``now=`` argument of a render as a datetime (``None`` stays ``None``).

    Accepts a ``date``, a ``datetime`` or an ISO 8601 string (a date or a date and time);
    the whole string must parse. Anything else raises ``ValidationError(field="now")``.
    """
    if now is None or type(now) is _dt.datetime:
        return now
    if isinstance(now, _dt.datetime):
        return now
    if isinstance(now, _dt.date):
        return _dt.datetime(now.year, now.month, now.day)
    if isinstance(now, str):
        try:
            return _dt.datetime.fromisoformat(now)
        except ValueError:
            raise ValidationError(
                f"now must be an ISO date or datetime (YYYY-MM-DD[THH:MM:SS]), got {now!r}",
                field="now",
            ) from None
    raise ValidationError(
        f"now must be a date, a datetime or an ISO string, got {type(now).__name__}", field="now"
    )


def _frozen_options(options: Any, keywords: frozenset[str], what: str) -> Mapping[str, Any]:
    """``options`` as a read-only copy; a name that is one of the request's fields is refused."""
    if not options and (options is _EMPTY or isinstance(options, Mapping)):
        return _EMPTY
    if not isinstance(options, Mapping):
        raise ValidationError(
            f"options must be a mapping of template option names to values, "
            f"got {type(options).__name__}",
            field="options",
        )
    for name in options:
        if not isinstance(name, str):
            raise ValidationError(
                f"option names must be strings, got {type(name).__name__} {name!r}",
                field="options",
            )
        if name in keywords:
            raise ValidationError(
                f"{name!r} is a {what} keyword, not a template option: set it as the "
                f"request's field ({name}=...)",
                field=f"options.{name}",
            )
    return MappingProxyType(dict(options))


#: Requests made from keywords alone, by the keyword names and the ids of their values.
_REMEMBERED: dict[tuple[Any, ...], Any] = {}
_REMEMBERED_LIMIT = 256


class _KeywordRequest:
    """The keyword handling both requests share: fields by name, the rest template options."""

    __slots__ = ()
    #: Field names a call's keywords may set (every other keyword is a template option).
    KEYWORDS: ClassVar[frozenset[str]] = frozenset()
    #: Fields that must be a bool, and the other fields :meth:`_check` validates.
    _FLAGS: ClassVar[tuple[str, ...]] = ()
    _CHECKED: ClassVar[frozenset[str]] = frozenset()
    #: The request with every field at its default (set once the class exists).
    _DEFAULT: ClassVar[Any]
    options: Mapping[str, Any]

    @classmethod
    def from_kwargs(cls: type[_R], kwargs: Mapping[str, Any], base: _R | None = None) -> _R:
        """The request of a call's keywords, over ``base`` (the defaults when ``None``).

        A keyword naming a field sets it; any other keyword is a template option, added
        to ``base``'s options (a keyword wins over an option of the same name).
        """
        if not kwargs:
            return base if base is not None else cls._DEFAULT
        if base is None:
            # The same keywords with the same objects give the same request: remembered by
            # the objects' ids, which stay valid because the request holds every value.
            key = (cls, *kwargs, *map(id, kwargs.values()))
            hit = _REMEMBERED.get(key)
            if hit is None:
                if len(_REMEMBERED) >= _REMEMBERED_LIMIT:
                    _REMEMBERED.clear()
                hit = _REMEMBERED[key] = cls.from_kwargs(kwargs, cls._DEFAULT)
            return hit
        # Built on the instance dict, not through __init__: this runs on every call with
        # keywords, so the common case (only field names) is two dict updates and a check.
        new = object.__new__(cls)
        fields = new.__dict__
        fields.update(base.__dict__)
        size = len(fields)
        options = base.options
        fields.update(kwargs)
        if len(fields) != size or "options" in kwargs:  # template options among the keywords
            keywords = cls.KEYWORDS
            extra = {name: value for name, value in kwargs.items() if name not in keywords}
            for name in extra:
                del fields[name]
            fields["options"] = MappingProxyType({**options, **extra} if options else extra)
        for name in cls._FLAGS:  # inline: the common keywords need no function call
            if type(fields[name]) is not bool:
                new._check((name,))
        if not cls._CHECKED.isdisjoint(kwargs):
            new._check([name for name in kwargs if name in cls._CHECKED])
        return new

    def _trusted(self: _R, **changes: Any) -> _R:
        """A copy with ``changes`` that are known valid (no checks: for hot internal paths)."""
        new = object.__new__(type(self))
        fields = new.__dict__
        fields.update(self.__dict__)
        fields.update(changes)
        return new

    def __post_init__(self) -> None:
        self._check(tuple(self.__dict__))

    def _check(self, names: Iterable[str]) -> None:
        """Validate the fields among ``names`` (``options`` is replaced by a read-only copy)."""


_RENDER_FLAGS = (
    "add_generation_prompt",
    "continue_final_message",
    "sequence_start",
    "strict_history",
    "lossless",
)
_RENDER_KEYWORDS = frozenset(("tools", *_RENDER_FLAGS, "now"))


@dataclasses.dataclass(frozen=True)
class RenderRequest(_KeywordRequest):
    """Everything a render needs besides the messages (frozen; build it once, reuse it).

    ``tools``: OpenAI tool definitions. ``add_generation_prompt``: end with the
    assistant's opening. ``continue_final_message``: leave the final message open (the
    generation prompt is then dropped). ``sequence_start=False``: render only what the
    messages add after an earlier, answered turn. ``now``: the date for templates that
    print one (a ``date``, ``datetime`` or ISO string). ``strict_history=True``: an
    assistant message the official template cannot write whole (text beside tool calls
    where it keeps only one) is refused, as the official bytes would lose it; by default
    it is written the way the model writes it (see docs/rendering.md, *Replies render
    back as the model wrote them*). ``lossless=True``: what the format's own rules leave
    out of the history (``Template.history``: earlier turns' reasoning, tool definitions
    it has no section for) is refused, naming the message and field, instead of left out
    (docs/rendering.md, *What a format leaves out*). ``options``: the template's own variables (e.g.
    ``enable_thinking``), checked by the template when it renders.

    ``chatfmt.render(messages, template, **kw)`` and every other render path take these
    fields as keywords (any other keyword is a template option) or ``request=`` (with
    keywords given too, they change the request for that call).
    """

    KEYWORDS: ClassVar[frozenset[str]] = _RENDER_KEYWORDS
    _FLAGS: ClassVar[tuple[str, ...]] = _RENDER_FLAGS
    _CHECKED: ClassVar[frozenset[str]] = frozenset(("now",))

    tools: Sequence[Any] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    sequence_start: bool = True
    now: _dt.date | _dt.datetime | str | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _EMPTY)
    strict_history: bool = False
    lossless: bool = False

    def _check(self, names: Iterable[str]) -> None:
        for name in names:
            value = getattr(self, name)
            if name == "options":
                frozen = _frozen_options(value, _RENDER_KEYWORDS, "render")
                object.__setattr__(self, "options", frozen)
            elif name == "now":
                if value is not None:
                    parse_now(value)
            elif name in _RENDER_FLAGS and type(value) is not bool:
                raise ValidationError(
                    f"{name} must be True or False, got {type(value).__name__} {value!r}",
                    field=name,
                )

    def __reduce__(self) -> tuple[Any, ...]:  # the read-only options view does not pickle
        return (
            RenderRequest,
            (
                self.tools,
                self.add_generation_prompt,
                self.continue_final_message,
                self.sequence_start,
                self.now,
                dict(self.options),
                self.strict_history,
                self.lossless,
            ),
        )


#: The request of a call without keywords (a generation prompt, from the sequence start).
DEFAULT_RENDER = RenderRequest._DEFAULT = RenderRequest()
#: The default of :func:`chatfmt.encode` (training data: no generation prompt).
DEFAULT_ENCODE = RenderRequest(add_generation_prompt=False)


class FromTemplate(enum.Enum):
    """``ParseRequest.reasoning_parser`` default: the template's reasoning parser."""

    TEMPLATE = "template"


_PARSE_KEYWORDS = frozenset(
    (
        "tools",
        "parser",
        "reasoning_parser",
        "thinking_prefilled",
        "special_token_ids",
        "tokenizer",
        "id_factory",
    )
)


@dataclasses.dataclass(frozen=True)
class ParseRequest(_KeywordRequest):
    """The parser options of :func:`chatfmt.parse` and :class:`chatfmt.StreamParser` (frozen).

    ``tools``: OpenAI tools (unknown names are flagged, arguments typed by their schema).
    ``parser``: a tool parser name that overrides the template's. ``reasoning_parser``:
    a reasoning parser name, ``None`` for none (default: the template's).
    ``thinking_prefilled``: output starts inside a reasoning block (``None``: derived
    from the template's generation prompt). ``special_token_ids`` (marker → id) or
    ``tokenizer``: tell real special tokens from look-alike text when ``token_ids`` are
    fed. ``id_factory``: ``index -> call id``. ``options``: template options (e.g.
    ``enable_thinking``) the template renders its generation prompt with.
    """

    KEYWORDS: ClassVar[frozenset[str]] = _PARSE_KEYWORDS
    _CHECKED: ClassVar[frozenset[str]] = frozenset(
        ("parser", "reasoning_parser", "thinking_prefilled", "id_factory")
    )

    tools: Sequence[Any] | None = None
    parser: str | None = None
    reasoning_parser: str | FromTemplate | None = FromTemplate.TEMPLATE
    thinking_prefilled: bool | None = None
    special_token_ids: Mapping[str, int] | None = None
    tokenizer: Any = None
    id_factory: Callable[[int], str] | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _EMPTY)

    def _check(self, names: Iterable[str]) -> None:
        for name in names:
            value = getattr(self, name)
            if name in ("parser", "reasoning_parser"):
                if value is not None and not isinstance(value, (str, FromTemplate)):
                    raise ParseError(f"{name} must be a parser name, got {type(value).__name__}")
            elif name == "id_factory":
                if value is not None and not callable(value):
                    raise ParseError(
                        f"id_factory must be a callable (index -> id), got {type(value).__name__}"
                    )
            elif name == "thinking_prefilled":
                if value is not None and type(value) is not bool:
                    raise ParseError(
                        f"thinking_prefilled must be True, False or None, got {value!r}"
                    )
            elif name == "options":
                try:
                    frozen = _frozen_options(value, _PARSE_KEYWORDS, "parse")
                except ValidationError as exc:
                    raise ParseError(str(exc)) from None
                object.__setattr__(self, "options", frozen)

    def __reduce__(self) -> tuple[Any, ...]:  # the read-only options view does not pickle
        values = [getattr(self, f.name) for f in dataclasses.fields(self)]
        values[-1] = dict(self.options)
        return (ParseRequest, tuple(values))


ParseRequest._DEFAULT = ParseRequest()
