"""Pair a template that has no tool-call format with a named one: :func:`with_tool_format`.

A :class:`ToolFormat` is what a template needs to use tools: how the tools are described in
the system message, how the assistant writes calls and how tool results come back, the
parser that reads calls from the model's output and the :class:`~chatfmt.parsing.ToolCallFormat`
(data) those calls follow. ``with_tool_format(template, "hermes")`` returns a template that
renders through ``template`` (its turns, special tokens, default system prompt, stop words
and options), with the conversation written in that format:

* **tools** — the format's tool section ends the system message (after a blank line; when
  there is none, a system message of the template's default system prompt, if any, and
  the section is added);
* **an assistant message with tool calls** — its text, a newline unless the text ends with
  one, then the calls as the format writes them, all as the message's content (trained);
* **consecutive tool results** — one user message of the format's result blocks.

A conversation without tools, calls or results renders exactly as with ``template``.
Pairing is for templates without a tool format; ``chatfmt chat`` and ``chatfmt serve``
apply a template's :attr:`~chatfmt.Template.default_tool_format` (SmolLM2: ``hermes``)
unless ``--tool-format`` chooses another or ``none``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ChatFmtError, UnsupportedFeatureError, ValidationError
from .protocol import Conversation, Message, Tool, validate_conversation
from .requests import RenderRequest
from .segments import Kind, Segment
from .template import RenderContext, Template, _final_message

if TYPE_CHECKING:
    from .parsing.base import FormatParser
    from .parsing.derived_format import ToolCallFormat

#: Text pieces of a rewritten message: (text, is markup). Markup is written as control
#: text (it may hold the format's special tokens), the rest as content.
Pieces = list[tuple[str, bool]]
#: The index of the system message added for the tool section when there is none.
_ADDED = -1
#: Pieces with the index of the message each belongs to (consecutive tool results make one
#: message of several).
_Owned = list[tuple[str, bool, int]]


@dataclass(frozen=True)
class ToolFormat:
    """A named tool format a template can be paired with (see the module docstring)."""

    name: str
    description: str
    #: How calls are written, as data (what the parser and the constraint compiler read).
    call_format: ToolCallFormat
    #: The tool parser that reads calls from the model's output.
    parser: type[FormatParser]
    #: The tool section of the system message.
    tools_section: Callable[[Sequence[Tool]], Pieces]
    #: An assistant message's calls (template name, message) — without its text.
    calls: Callable[[str, Message], Pieces]
    #: One tool result (template name, message); consecutive results make one user message.
    result: Callable[[str, Message], Pieces]
    #: Between the system text and the tool section.
    system_separator: str = "\n\n"
    #: Between a reply's text and its first call (left out when the text ends with it).
    call_separator: str = "\n"
    #: Between consecutive tool results.
    result_separator: str = "\n"


_FORMATS: dict[str, ToolFormat] = {}


def tool_formats() -> Mapping[str, ToolFormat]:
    """The named tool formats (built-in: ``hermes``), by name."""
    if not _FORMATS:
        from .families.hermes.tool_format import HERMES

        _FORMATS.setdefault(HERMES.name, HERMES)
    return _FORMATS


def register_tool_format(fmt: ToolFormat, *, replace: bool = False) -> ToolFormat:
    """Add a tool format under its name (``replace=True`` to redefine one)."""
    formats = tool_formats()
    if fmt.name in formats and not replace:
        raise ChatFmtError(f"a tool format named {fmt.name!r} exists (pass replace=True)")
    _FORMATS[fmt.name] = fmt
    return fmt


def tool_format_names() -> str:
    """The names of the tool formats, comma-separated (for messages)."""
    return ", ".join(sorted(tool_formats()))


def tool_format_hint() -> str:
    """How to choose a tool format, for errors about templates without one."""
    return (
        f"pick one with --tool-format NAME or chatfmt.with_tool_format(template, NAME), "
        f"NAME one of {tool_format_names()}"
    )


def no_tool_format(template: str, index: int, why: str = "") -> UnsupportedFeatureError:
    """The error for an assistant tool call (message ``index``) in a template without a tool
    format; ``why`` says what its official template does with one."""
    why = f" ({why})" if why else ""
    return UnsupportedFeatureError(
        f"template {template!r} has no tool-call format{why}; {tool_format_hint()}",
        index=index,
        field="tool_calls",
    )


def get_tool_format(name: str | ToolFormat) -> ToolFormat:
    """The tool format of ``name``; an unknown name raises, listing the known ones."""
    if isinstance(name, ToolFormat):
        return name
    fmt = tool_formats().get(name)
    if fmt is None:
        raise ChatFmtError(
            f"unknown tool format {name!r} (known: {tool_format_names()}, or 'none')"
        )
    return fmt


_PAIRED: dict[tuple[int, str], PairedTemplate] = {}
_PAIRED_LIMIT = 256


def with_tool_format(template: Template | str | Path, tool_format: str | ToolFormat) -> Template:
    """``template`` (any template, name, path or Jinja source) paired with ``tool_format`` (a
    name such as ``"hermes"``, or a :class:`ToolFormat`).

    Raises :class:`~chatfmt.errors.ChatFmtError` when the template has a tool format of its
    own (pairing would change how the model was trained to call tools). The same pair
    gives the same template object.
    """
    from .api import get_template

    base = get_template(template)
    fmt = get_tool_format(tool_format)
    if isinstance(base, PairedTemplate):
        if base.tool_format is fmt:
            return base
        base = base.base
    if base.supports_tools:
        raise ChatFmtError(
            f"template {base.name!r} has its own tool-call format ({base.tool_parser}); "
            f"--tool-format / with_tool_format pairs templates that have none"
        )
    key = (id(base), fmt.name)
    paired = _PAIRED.get(key)
    if paired is None or paired.base is not base or paired.tool_format is not fmt:
        if len(_PAIRED) >= _PAIRED_LIMIT:
            _PAIRED.clear()
        paired = _PAIRED[key] = PairedTemplate(base, fmt)
    return paired


def resolve_tool_format(template: Template, choice: str | None) -> Template:
    """What a front end serves: ``template`` paired with ``choice``; ``None``: the template's
    own format, else its :attr:`~chatfmt.Template.default_tool_format`; ``"none"``: as is."""
    if choice == "none":
        return template.base if isinstance(template, PairedTemplate) else template
    if choice is not None:
        return with_tool_format(template, choice)
    default = getattr(template, "default_tool_format", None)
    if template.supports_tools or default is None:
        return template
    return with_tool_format(template, default)


class _Paired(Template):
    """A template over ``base`` with tool calls of its own: names ``"<base>+<what>"``; stop
    words, options, control tokens and reasoning are the base's."""

    def __init__(self, base: Template, what: str, description: str, source: str) -> None:
        self.base = base
        self.name = f"{base.name}+{what}"
        self.description = f"{base.description} {description}"
        self.source = f"{base.source}; {source}"
        self.generation_config = base.generation_config
        self.supports_tools = True
        self.supports_reasoning = base.supports_reasoning
        self.control_tokens = base.control_tokens
        self.text_control_tokens = base.text_control_tokens
        self.default_options = base.default_options  # type: ignore[misc]
        self.prefix_stable = base.prefix_stable
        self.default_tool_format = None
        self.history = base.history

    def check_options(self, options: Mapping[str, Any]) -> None:
        self.base.check_options(options)


class PairedTemplate(_Paired):
    """A template without a tool format, rendered with a named one (see the module docstring).

    Names, stop words, options and reasoning are the base template's; ``name`` is
    ``"<base>+<format>"``; :attr:`tool_call_format` is the format's call description.
    """

    def __init__(self, base: Template, tool_format: ToolFormat) -> None:
        name = tool_format.name
        super().__init__(base, name, f"Tools: {tool_format.description}.", f"tool format: {name}")
        self.tool_format = tool_format
        self.tool_call_format = tool_format.call_format
        # the named format writes the tool definitions the base has no section for
        self.history = dataclasses.replace(base.history, tool_definitions=True)
        self.set_parsers(tool_format.parser, base.reasoning_parser_class or base.reasoning_parser)

    def info(self) -> dict[str, Any]:
        out = self.base.info()
        out.update(
            name=self.name,
            description=self.description,
            supports_tools=True,
            tool_parser=self.tool_parser,
            tool_format=self.tool_format.name,
            default_tool_format=None,
        )
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (with_tool_format, (self.base, self.tool_format.name))

    # ------------------------------------------------------------------ rendering
    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        plain, pieces = self._rewrite(conv, True)
        return _refined(self._guarded(lambda: self.base.render_conversation(plain, ctx)), pieces)

    def _segments(self, messages: Any, request: RenderRequest) -> list[Segment]:
        plain, pieces, sub = self._prepared(messages, request)
        return _refined(self._guarded(lambda: self.base._segments(plain, sub)), pieces)

    def _render(self, messages: Any, request: RenderRequest) -> str:
        plain, _pieces, sub = self._prepared(messages, request)
        return self._guarded(lambda: self.base._render(plain, sub))

    def _prepared(
        self, messages: Any, request: RenderRequest
    ) -> tuple[Conversation, dict[int, _Owned], RenderRequest]:
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        conv = validate_conversation(
            messages, request.tools, require_tool_calls=request.sequence_start
        )
        if request.continue_final_message:
            _final_message(conv)  # a message with tool calls cannot be continued
        plain, pieces = self._rewrite(conv, request.sequence_start)
        return plain, pieces, request._trusted(tools=None)

    def _guarded(self, render: Callable[[], Any]) -> Any:
        """Run ``render``; an error about the added system message names the tools instead."""
        try:
            return render()
        except ValidationError as exc:
            if exc.index != _ADDED:
                raise
            raise type(exc)(
                f"{exc.reason} (the system message holding the {self.tool_format.name} tool "
                "section)",
                field="tools",
            ) from None

    def _rewrite(
        self, conv: Conversation, sequence_start: bool
    ) -> tuple[Conversation, dict[int, _Owned]]:
        """The conversation in the format, without tools, calls or results, and the pieces
        of each rewritten message (by its index)."""
        fmt = self.tool_format
        msgs = list(conv.messages)
        pieces: dict[int, _Owned] = {}
        out: list[Message] = []
        if conv.tools and sequence_start:
            first = msgs[0] if msgs and msgs[0].role == "system" else None
            head: Pieces = []
            if first is not None:
                head = [(first.content or "", False), (fmt.system_separator, True)]
                msgs = msgs[1:]
            else:
                default = getattr(self.base, "default_system", None)
                if isinstance(default, str) and default:
                    head = [(default, True), (fmt.system_separator, True)]
            index = _ADDED if first is None else first.index
            text = _own(pieces, index, head + fmt.tools_section(conv.tools))
            out.append(
                dataclasses.replace(first, content=text)
                if first is not None
                else Message(role="system", content=text, source_role="system", index=index)
            )
        pos = 0
        while pos < len(msgs):
            m = msgs[pos]
            if m.role == "tool":
                run: _Owned = []
                while pos < len(msgs) and msgs[pos].role == "tool":
                    r = msgs[pos]
                    sep = [(fmt.result_separator, True)] if run else []
                    run += [(t, markup, r.index) for t, markup in sep + fmt.result(self.name, r)]
                    pos += 1
                pieces[m.index] = run
                text = "".join(t for t, _markup, _owner in run)
                out.append(Message(role="user", content=text, source_role="user", index=m.index))
                continue
            if m.role == "assistant" and m.tool_calls:
                head = [(m.content, False)] if m.content else []
                if m.content and not m.content.endswith(fmt.call_separator):
                    head.append((fmt.call_separator, True))
                text = _own(pieces, m.index, head + fmt.calls(self.name, m))
                m = dataclasses.replace(m, content=text, tool_calls=())
            out.append(m)
            pos += 1
        return Conversation(tuple(out), ()), pieces


def _own(pieces: dict[int, _Owned], index: int, parts: Pieces) -> str:
    """Record ``parts`` as message ``index``'s pieces; their text."""
    pieces[index] = [(text, markup, index) for text, markup in parts]
    return "".join(text for text, _markup in parts)


def _refined(segments: list[Segment], pieces: dict[int, _Owned]) -> list[Segment]:
    """``segments`` with each rewritten message's content split into its pieces (markup as
    control text, each piece owned by its message); the added system message's text belongs
    to no message."""
    if not pieces:
        return segments
    out: list[Segment] = []
    for seg in segments:
        parts = pieces.get(seg.message) if seg.message is not None else None
        if parts is None:
            out.append(seg)
            continue
        if seg.kind is Kind.CONTENT and seg.text == "".join(p[0] for p in parts):
            out.extend(
                Segment(
                    text,
                    Kind.CONTROL if markup else Kind.CONTENT,
                    None if owner == _ADDED else owner,
                    seg.trained,
                )
                for text, markup, owner in parts
                if text
            )
        else:
            owner = None if seg.message == _ADDED else seg.message
            out.append(Segment(seg.text, seg.kind, owner, seg.trained))
    return out


# ---------------------------------------------------------------------- parser-only pairing
_PARSER_PAIRED: dict[tuple[int, str], ParserPairedTemplate] = {}


def with_tool_parser(template: Template | str | Path, parser: str) -> Template:
    """``template`` rendered as it is, its output's tool calls read by the tool parser named
    ``parser`` (vLLM's ``--tool-call-parser``: e.g. Llama 3.2 with the ``pythonic`` parser and
    a template that asks for pythonic calls).

    The reasoning parser, end-of-turn markers and options stay the template's; the
    constraints follow the parser's declared :class:`~chatfmt.parsing.ToolCallFormat`. An
    unknown parser name raises :class:`~chatfmt.errors.ChatFmtError` listing the known ones.
    The same pair gives the same template object.
    """
    from .api import get_template
    from .parsing.base import TOOL_PARSERS

    base = get_template(template)
    if isinstance(base, ParserPairedTemplate):
        base = base.base
    parser_cls = TOOL_PARSERS.get(parser)
    if parser_cls is None:
        raise ChatFmtError(
            f"unknown tool parser {parser!r} (known: {', '.join(sorted(TOOL_PARSERS))})"
        )
    if base.tool_parser == parser:
        return base
    key = (id(base), parser)
    paired = _PARSER_PAIRED.get(key)
    if paired is None or paired.base is not base:
        if len(_PARSER_PAIRED) >= _PAIRED_LIMIT:
            _PARSER_PAIRED.clear()
        paired = _PARSER_PAIRED[key] = ParserPairedTemplate(base, parser_cls, parser)
    return paired


class ParserPairedTemplate(_Paired):
    """A template whose output is read with another tool parser (:func:`with_tool_parser`).

    Renders exactly as its base; ``name`` is ``"<base>+<parser>"``.
    """

    def __init__(self, base: Template, parser_cls: type[FormatParser], parser: str) -> None:
        super().__init__(
            base, parser, f"Tool calls read by the {parser} parser.", f"tool parser: {parser}"
        )
        self.set_parsers(
            parser_cls, base.reasoning_parser_class or base.reasoning_parser, tool_name=parser
        )

    def __getattr__(self, name: str) -> Any:
        # what only some templates have (a Jinja source, official templates…) is the base's
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    def info(self) -> dict[str, Any]:
        out = self.base.info()
        out.update(name=self.name, description=self.description, tool_parser=self.tool_parser)
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (with_tool_parser, (self.base, self.tool_parser))

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        return self.base.render_conversation(conv, ctx)

    def _segments(self, messages: Any, request: RenderRequest) -> list[Segment]:
        return self.base._segments(messages, request)

    def _render(self, messages: Any, request: RenderRequest) -> str:
        return self.base._render(messages, request)
