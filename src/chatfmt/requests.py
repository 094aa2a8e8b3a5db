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
from collections.abc import Callable, Mapping, Sequence
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
    if options is _EMPTY or (isinstance(options, Mapping) and not options):
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


#: The default request of each class (made once).
_DEFAULTS: dict[type, Any] = {}


class _KeywordRequest:
    """The keyword handling both requests share: fields by name, the rest template options."""

    __slots__ = ()
    #: Field names a call's keywords may set (every other keyword is a template option).
    KEYWORDS: ClassVar[frozenset[str]] = frozenset()
    options: Mapping[str, Any]

    @classmethod
    def from_kwargs(cls: type[_R], kwargs: Mapping[str, Any], base: _R | None = None) -> _R:
        """The request of a call's keywords, over ``base`` (the defaults when ``None``).

        A keyword naming a field sets it; any other keyword is a template option, added
        to ``base``'s options (a keyword wins over an option of the same name).
        """
        if base is None:
            base = _DEFAULTS.get(cls) or _DEFAULTS.setdefault(cls, cls())
        if not kwargs:
            return base
        fields: dict[str, Any] = {}
        options: dict[str, Any] = {}
        for name, value in kwargs.items():
            if name in cls.KEYWORDS:
                fields[name] = value
            else:
                options[name] = value
        if options:
            fields["options"] = {**base.options, **options} if base.options else options
        return dataclasses.replace(base, **fields)  # type: ignore[type-var]

    def _trusted(self: _R, **changes: Any) -> _R:
        """A copy with ``changes`` that are known valid (no checks: for hot internal paths)."""
        new = object.__new__(type(self))
        name: str
        for name in self.__slots__:
            object.__setattr__(new, name, changes.get(name, getattr(self, name)))
        return new


_RENDER_KEYWORDS = frozenset(
    ("tools", "add_generation_prompt", "continue_final_message", "sequence_start", "now")
)


@dataclasses.dataclass(frozen=True, slots=True)
class RenderRequest(_KeywordRequest):
    """Everything a render needs besides the messages (frozen; build it once, reuse it).

    ``tools``: OpenAI tool definitions. ``add_generation_prompt``: end with the
    assistant's opening. ``continue_final_message``: leave the final message open (the
    generation prompt is then dropped). ``sequence_start=False``: render only what the
    messages add after an earlier, answered turn. ``now``: the date for templates that
    print one (a ``date``, ``datetime`` or ISO string). ``options``: the template's own
    variables (e.g. ``enable_thinking``), checked by the template when it renders.

    ``chatfmt.render(messages, template, **kw)`` and every other render path take these
    fields as keywords (any other keyword is a template option) or ``request=`` (with
    keywords given too, they change the request for that call).
    """

    KEYWORDS: ClassVar[frozenset[str]] = _RENDER_KEYWORDS

    tools: Sequence[Any] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    sequence_start: bool = True
    now: _dt.date | _dt.datetime | str | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        for name in ("add_generation_prompt", "continue_final_message", "sequence_start"):
            value = getattr(self, name)
            if type(value) is not bool:
                raise ValidationError(
                    f"{name} must be True or False, got {type(value).__name__} {value!r}",
                    field=name,
                )
        if self.now is not None:
            parse_now(self.now)
        object.__setattr__(
            self, "options", _frozen_options(self.options, _RENDER_KEYWORDS, "render")
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
            ),
        )


#: The request of a call without keywords (a generation prompt, from the sequence start).
DEFAULT_RENDER = RenderRequest()
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


@dataclasses.dataclass(frozen=True, slots=True)
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

    tools: Sequence[Any] | None = None
    parser: str | None = None
    reasoning_parser: str | FromTemplate | None = FromTemplate.TEMPLATE
    thinking_prefilled: bool | None = None
    special_token_ids: Mapping[str, int] | None = None
    tokenizer: Any = None
    id_factory: Callable[[int], str] | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        for name in ("parser", "reasoning_parser"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (str, FromTemplate)):
                raise ParseError(f"{name} must be a parser name, got {type(value).__name__}")
        if self.id_factory is not None and not callable(self.id_factory):
            raise ParseError(
                f"id_factory must be a callable (index -> id), got {type(self.id_factory).__name__}"
            )
        if self.thinking_prefilled is not None and type(self.thinking_prefilled) is not bool:
            raise ParseError(
                f"thinking_prefilled must be True, False or None, got {self.thinking_prefilled!r}"
            )
        try:
            options = _frozen_options(self.options, _PARSE_KEYWORDS, "parse")
        except ValidationError as exc:
            raise ParseError(str(exc)) from None
        object.__setattr__(self, "options", options)

    def __reduce__(self) -> tuple[Any, ...]:  # the read-only options view does not pickle
        values = [getattr(self, f.name) for f in dataclasses.fields(self)]
        values[-1] = dict(self.options)
        return (ParseRequest, tuple(values))
