"""The incremental parsing framework: the emitter, parser registry, ``StreamParser``, ``parse``.

Every family parser is an explicit state machine over a small buffer of
not-yet-decided text. ``feed`` appends a chunk and runs the machine as far as the
text decides; ``finish`` closes it. Both return typed deltas (:mod:`.deltas`).
:func:`parse` is the stream parser fed once, and :func:`merge_deltas` folds deltas
into a :class:`ParsedMessage`, so a stream and a whole parse give the same message
by construction.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import string
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..api import get_template
from ..errors import ChatFmtError, ParseError
from ..registry import REGISTRY
from ..requests import FromTemplate, ParseRequest
from ..template import Template
from .deltas import (
    CODE_INTERPRETER,
    ContentDelta,
    Delta,
    FinishReason,
    ParsedMessage,
    ReasoningDelta,
    ToolCallDelta,
    call_delta,
    content_delta,
    merge_deltas,
    reasoning_delta,
)
from .end_of_turn import EndOfTurn
from .markers import MarkerSet
from .separators import NONE as NO_SEPARATORS
from .separators import Separators, probe_separators
from .special import SpecialTokens
from .tables import ParserTable

IdFactory = Callable[[int], str]

_ALNUM = string.ascii_letters + string.digits


def openai_call_id(_index: int) -> str:
    """A random OpenAI-style call id (``call_`` + 24 hex digits)."""
    return "call_" + secrets.token_hex(12)


def mistral_call_id(_index: int) -> str:
    """A random 9-character alphanumeric id, the form Mistral models expect."""
    return "".join(secrets.choice(_ALNUM) for _ in range(9))


class Emitter:
    """Collects the deltas of one ``feed``; neighbouring text of one kind makes one delta.

    Deltas are frozen: text that continues the last delta replaces it with a longer
    one. Content whitespace is held back until it is known what follows it:

    - whitespace before any other content is content once other content follows (less
      the whitespace the template itself writes before an assistant's text after its
      generation prompt, as far as the model wrote it, see :mod:`.separators`; parsers
      hand the emitter that whitespace even where it ends a line of markup, e.g. a
      metadata line), or at :meth:`end` when the message has
      no tool calls (the whitespace around calls is not content, see :func:`merge_deltas`);
    - whitespace after content is content once more content follows; before the first
      tool call, all but the separator the template itself writes between an assistant's
      text and its calls is content, so that the message renders back as the model wrote
      it (docs/rendering.md); before a later call and after the last one it is not content.

    So the content deltas always add up to the message's ``content``.
    """

    __slots__ = (
        "_after_call",
        "_args",
        "_blank",
        "_held",
        "_texted",
        "_tools",
        "calls",
        "deltas",
        "id_factory",
        "separators",
    )

    def __init__(
        self,
        id_factory: IdFactory,
        tools: Mapping[str, Any] | None,
        separators: Separators = NO_SEPARATORS,
    ) -> None:
        self.id_factory = id_factory
        self._tools = tools
        self.deltas: list[Delta] = []
        self.calls = 0
        #: The whitespace the template writes itself around an assistant's text.
        self.separators = separators
        self._args: dict[int, list[str]] = {}
        self._blank = ""  # whitespace-only content held back before any content (see class doc)
        self._held = ""  # whitespace held back after content (see class doc)
        self._texted = False  # whether content other than whitespace was emitted
        self._after_call = False  # whether a call started and no content followed it

    def take(self) -> list[Delta]:
        """The deltas emitted since the last call."""
        out, self.deltas = self.deltas, []
        return out

    def tool_schema(self, name: str) -> Any:
        """The JSON schema of a tool's parameters, if tools were given."""
        if not self._tools:
            return None
        return self._tools.get(name)

    def _content(self, text: str) -> None:
        self._extend(ContentDelta, content_delta, text)

    def _extend(self, kind: type, make: Any, text: str) -> None:
        """Append ``text`` as a ``kind`` delta, merged into the last one when it is one too."""
        deltas = self.deltas
        if deltas:
            last = deltas[-1]
            if type(last) is kind:
                deltas[-1] = make(last.text + text)
                return
        deltas.append(make(text))

    def content(self, text: str) -> None:
        if not text:
            return
        if not self._texted:
            if text.isspace():
                self._blank += text
                return
            text, self._blank, self._texted = self._blank + text, "", True
            sep = self.separators.before_content
            if sep:  # the template's own (as much of it as the model wrote)
                k = 0
                while k < len(sep) and k < len(text) and text[k] == sep[k]:
                    k += 1
                text = text[k:]
        elif self._held:
            text, self._held = self._held + text, ""
        body = text.rstrip(WS)
        if len(body) < len(text):
            self._held = text[len(body) :]
            text = body
        self._release(text)

    def _release(self, text: str) -> None:
        """Emit held whitespace ``text`` as content (before other deltas)."""
        if text:
            self._after_call = False
            self._content(text)

    def close_text(self) -> None:
        """The text's own end marker was read (a Harmony message's ``<|end|>``): whitespace
        held after it is the model's content, whatever follows."""
        if self._held:
            self._release(self._held)
            self._held = ""

    def end(self) -> None:
        """End of stream: held whitespace is content unless it is next to tool calls."""
        if self._blank and not self.calls:
            self._content(self._blank)
        if self._held and not self._after_call:
            self._release(self._held)
        self._blank = self._held = ""

    def reasoning(self, text: str) -> None:
        if not text:
            return
        if self._held:  # content whitespace before reasoning stays where it was
            self._release(self._held)
            self._held = ""
        self._extend(ReasoningDelta, reasoning_delta, text)

    def start_call(
        self, name: str, *, code: bool = False, error: str | None = None, call_id: str | None = None
    ) -> int:
        """Open a tool call; returns its index. Unknown names (when tools were given) are flagged.

        ``call_id`` is the id the model wrote for the call (Kimi's ``functions.NAME:IDX``),
        else one is made by the id factory. Code-interpreter calls (``code=True``) are
        named ``"code_interpreter"``.
        """
        index = self.calls
        held, self._held = self._held, ""
        if held and not index and not self._after_call:
            self._release(self.separators.content_before_calls(held))
        self._after_call = True
        self.calls += 1
        call_id = call_id or self.id_factory(index)
        if code:
            name = CODE_INTERPRETER
        else:
            if error is None and self._tools is not None and name not in self._tools:
                error = f"unknown tool {name!r}"
            self._args[index] = []
        if error is None:
            self.deltas.append(call_delta(index, "", call_id, name, code))
        else:
            self.deltas.append(ToolCallDelta(index, "", call_id, name, code, error))
        return index

    def _call_text(self, index: int, code: bool, text: str) -> None:
        if not text:
            return
        deltas = self.deltas
        if deltas:
            last = deltas[-1]
            if (
                type(last) is ToolCallDelta
                and last.index == index
                and last.code is code
                and last.error is None
            ):
                deltas[-1] = call_delta(index, last.text + text, last.id, last.name, code)
                return
        deltas.append(call_delta(index, text, None, None, code))

    def args(self, index: int, text: str) -> None:
        """Append raw argument text of call ``index``."""
        self._args[index].append(text)
        if not text:
            return
        deltas = self.deltas
        if deltas:
            last = deltas[-1]
            if (
                type(last) is ToolCallDelta
                and last.index == index
                and not last.code
                and last.error is None
            ):
                deltas[-1] = call_delta(index, last.text + text, last.id, last.name, False)
                return
        deltas.append(call_delta(index, text, None, None, False))

    def code(self, index: int, text: str) -> None:
        """Append code of code-interpreter call ``index``."""
        self._call_text(index, True, text)

    def arguments_text(self, index: int) -> str:
        return "".join(self._args.get(index, ()))

    def fail(self, index: int, reason: str) -> None:
        """Flag call ``index`` invalid (its text so far stays its arguments)."""
        self.deltas.append(ToolCallDelta(index, error=reason))

    def check_arguments(self, index: int) -> None:
        """At the end of a call: its arguments must be a JSON object, else flag it."""
        text = self.arguments_text(index)
        try:
            value = json.loads(text)
        except ValueError:
            self.fail(index, "arguments are not valid JSON")
            return
        except RecursionError:
            self.fail(index, "arguments are nested too deeply to decode")
            return
        if not isinstance(value, dict):
            self.fail(index, "arguments are not a JSON object")


#: JSON's whitespace, which every parser skips between tokens.
WS = " \t\r\n"


class FormatParser:
    """Base of the family state machines.

    Subclasses implement :meth:`step`, which looks at ``self.buf[self.pos:]``,
    consumes what it can decide (advancing ``self.pos``, emitting through
    ``self.out``) and returns True to be called again or False when it needs more
    text. ``self.final`` is True once the stream has ended. Consumed text is
    dropped after every feed, so only undecided text is ever kept; ``self.offset``
    is the stream offset of ``self.buf[0]`` (for :meth:`real`).
    """

    #: Parser name (as in a template's ``tool_parser`` / ``reasoning_parser``).
    name: ClassVar[str] = ""
    #: Markers that are single special tokens in this family (checked against token ids).
    special_markers: ClassVar[tuple[str, ...]] = ()
    #: End-of-turn markers of a parser used by one family only, read when it parses by bare
    #: name (with a template, the template's stop words are read instead).
    end_of_turn: ClassVar[tuple[str, ...]] = ()
    #: Whether the format has code-interpreter calls (emitted as ``code_interpreter`` calls).
    code_calls: ClassVar[bool] = False
    #: Markers that, written first in an output whose reasoning block the prompt opened,
    #: mean the model skipped reasoning: the output is this parser's (Nemotron Nano v2's
    #: bare ``<TOOLCALL>``). Read by the reasoning parsers that wrap this one.
    skips_reasoning: ClassVar[tuple[str, ...]] = ()

    def __init__(self, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]) -> None:
        self.out = out
        self.budget = budget
        self.options = options
        self.buf = ""
        self.pos = 0
        self.offset = 0
        self.final = False

    @property
    def in_answer(self) -> bool:
        """Whether the text read now is the answer, past any reasoning block (always, for a
        parser without one; a reasoning parser says when it hands text to its tool parser)."""
        return True

    def real(self, marker: str, pos: int) -> bool:
        """Whether the special ``marker`` at ``self.buf[pos]`` is a real special token."""
        return self.budget.is_real(marker, self.offset + pos)

    def low_water(self) -> int:
        """The lowest stream offset this parser may still ask :meth:`real` about."""
        return self.offset

    def skip_ws(self) -> bool:
        """Consume whitespace; False if the buffer ran out."""
        buf, pos, n = self.buf, self.pos, len(self.buf)
        while pos < n and buf[pos] in WS:
            pos += 1
        self.pos = pos
        return pos < n

    def step(self) -> bool:
        """Advance the state machine (see class doc)."""
        self.out.content(self.buf[self.pos :])
        self.pos = len(self.buf)
        return False

    def close(self) -> None:
        """End of stream: everything is in ``buf``; release or flag what is left."""

    def feed(self, text: str) -> None:
        if self.pos:
            self.offset += self.pos
            self.buf = self.buf[self.pos :] + text
        else:
            self.buf += text
        self.pos = 0
        while self.step():
            pass

    def finish(self) -> None:
        self.final = True
        while self.step():
            pass
        self.close()
        self.offset += len(self.buf)
        self.buf, self.pos = "", 0


class PlainParser(FormatParser):
    """No tool-call syntax: everything is content."""

    name = "plain"


def _shared_tool_parsers() -> list[tuple[type[FormatParser], tuple[str, ...]]]:
    return [(PlainParser, ())]


def _shared_reasoning_parsers() -> list[tuple[Callable[..., FormatParser], tuple[str, ...]]]:
    from .reasoning import ThinkParser

    return [(ThinkParser, ("deepseek_r1",))]


#: Tool parsers by name: ``plain`` and every family's (read from the family table on first use).
TOOL_PARSERS: ParserTable[type[FormatParser]] = ParserTable("tool", _shared_tool_parsers)
#: Reasoning parsers by name: factories wrapping a tool parser (``think`` and the families').
REASONING_PARSERS: ParserTable[Callable[..., FormatParser]] = ParserTable(
    "reasoning", _shared_reasoning_parsers
)


def register_tool_parser(cls: type[FormatParser], *aliases: str) -> type[FormatParser]:
    """Add a tool parser under its name and aliases; a name taken by another parser is an error."""
    return TOOL_PARSERS.add(cls, *aliases)


def register_reasoning_parser(
    factory: Callable[..., FormatParser], *aliases: str
) -> Callable[..., FormatParser]:
    """Add a reasoning parser (a class taking ``(inner, out, budget, options)``) under its
    ``name`` and aliases; a name taken by another parser is an error."""
    return REASONING_PARSERS.add(factory, *aliases)


def _tool_schemas(tools: Sequence[Any] | None) -> dict[str, Any] | None:
    """Tool name → parameters schema; ``tools`` is a list of OpenAI tools (or tool names)."""
    if tools is None:
        return None
    if not isinstance(tools, (list, tuple)):
        raise ParseError(f"tools must be a list of OpenAI tool objects, got {type(tools).__name__}")
    out: dict[str, Any] = {}
    for tool in tools:
        if isinstance(tool, str):
            out[tool] = None
            continue
        if not isinstance(tool, Mapping):
            raise ParseError(f"tools must be OpenAI tool objects, got {type(tool).__name__}")
        fn = tool.get("function") if tool.get("type", "function") == "function" else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            out[fn["name"]] = fn.get("parameters")
    return out


#: Options the parsing framework itself reads (the rest are template options).
PARSER_OPTIONS = tuple(sorted(ParseRequest.KEYWORDS))


def _parse_target(template: Any) -> tuple[Template | None, str | None]:
    """``(template, parser name)`` of the first argument of :class:`StreamParser`.

    It is a template (object, name, alias, model id, path or source: looked up with
    :func:`~chatfmt.get_template`) or, when no template has that name, a parser name.
    """
    if template is None:
        return None, None
    if isinstance(template, Template):
        return template, None
    if (
        isinstance(template, str)
        and (template in TOOL_PARSERS or template in REASONING_PARSERS)
        and template not in REGISTRY
    ):
        return None, template
    if isinstance(template, (str, Path)):
        return get_template(template), None
    raise ParseError(
        f"template must be a template name, path or Template, got {type(template).__name__}"
    )


def parser_names(name: str) -> tuple[str, str | None]:
    """``(tool parser, reasoning parser)`` of a parser name (a reasoning parser runs over
    ``plain``); an unknown name raises :class:`ParseError`."""
    if name in TOOL_PARSERS:
        return name, None
    if name in REASONING_PARSERS:
        return "plain", name
    raise ParseError(
        f"unknown tool parser {name!r} "
        f"(known: {', '.join(sorted(n for n in TOOL_PARSERS if ':' not in n))})"
    )


def _choose_parsers(
    tpl: Template | None, named: str | None, request: ParseRequest
) -> tuple[str, str | None]:
    """(tool parser name, reasoning parser name) for a template and/or a parser name.

    ``request.parser`` forces the tool parser only: a template given with it still
    chooses the reasoning parser (and the prefill detection).
    ``request.reasoning_parser`` overrides that choice; ``None`` turns reasoning
    parsing off.
    """
    tool, reasoning = (request.parser, None) if named is None else parser_names(named)
    if request.parser is not None:
        tool = request.parser
    if tpl is not None:
        reasoning = tpl.reasoning_parser
        if tool is None and tpl.tool_parser is None:
            from .derived import derived_parsers  # a Jinja template without a parser: derive one

            derived = derived_parsers(tpl, dict(request.options))
            if derived is not None:
                tool, reasoning = derived[0], reasoning or derived[1]
        if tool is None:
            tool = tpl.tool_parser or "plain"
    if not isinstance(request.reasoning_parser, FromTemplate):
        reasoning = request.reasoning_parser
    if tool is None:
        if reasoning is None:
            raise ParseError("give a template or a parser name")
        tool = "plain"
    if tool not in TOOL_PARSERS:
        tool, by_name = parser_names(tool)
        reasoning = by_name or reasoning
    if reasoning is not None and reasoning not in REASONING_PARSERS:
        raise ParseError(f"unknown reasoning parser {reasoning!r}")
    return tool, reasoning


def _check_options(tpl: Any, options: Mapping[str, Any]) -> Mapping[str, Any]:
    """The template options ``options``, checked: unknown names raise :class:`ParseError`."""
    if not options:
        return options
    known = f"parser options: {', '.join(PARSER_OPTIONS)}"
    if tpl is None:
        raise ParseError(f"unknown parse option(s) {', '.join(sorted(options))} ({known})")
    template_known = ", ".join(sorted(getattr(tpl, "default_options", {}) or {})) or "none"
    try:
        tpl.check_options(options)
    except ChatFmtError:
        raise ParseError(
            f"unknown parse option(s) {', '.join(sorted(options))} "
            f"({known}; options of template {tpl.name!r}: {template_known})"
        ) from None
    return options


def _setup(template: Any, request: ParseRequest) -> tuple[Template | None, str, _Plan]:
    """The template, tool parser name and :class:`_Plan` of a parse (options checked)."""
    tpl, named = _parse_target(template)
    tool_name, reasoning_name = _choose_parsers(tpl, named, request)
    return (
        tpl,
        tool_name,
        _plan(tpl, tool_name, reasoning_name, _check_options(tpl, request.options)),
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a (template, parsers, template options) combination needs; computed once."""

    tool_cls: type[FormatParser]
    reasoning: Callable[..., FormatParser] | None
    #: Special markers of the chosen parsers and the end-of-turn markers.
    markers: frozenset[str]
    #: Whether the generation prompt opens a reasoning block (None: no reasoning parser).
    prefilled: bool | None
    end_markers: MarkerSet | None
    #: Whitespace the template writes after its end-of-turn marker.
    after: str
    #: The whitespace the template writes itself around an assistant's text.
    separators: Separators = NO_SEPARATORS


#: Plans per template object (dropped with it), then per (parsers, options) key.
_PLANS: weakref.WeakKeyDictionary[Any, dict[Any, _Plan]] = weakref.WeakKeyDictionary()
#: Plans without a template (parser names only).
_BARE_PLANS: dict[Any, _Plan] = {}
#: Entries kept per template (options such as ``date_string`` may vary per call).
_PLANS_PER_TEMPLATE = 32


def _freeze(value: Any) -> Any:
    """A hashable stand-in for an option value (lists, dicts, sets by content)."""
    if isinstance(value, Mapping):
        return ("{}", tuple(sorted((str(k), _freeze(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("[]", tuple(_freeze(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, value))))
    hash(value)  # unhashable objects raise TypeError: not cached
    return (type(value).__name__, value)


def _plan(
    tpl: Any, tool_name: str, reasoning_name: str | None, tpl_opts: Mapping[str, Any]
) -> _Plan:
    """The cached :class:`_Plan` (never shared between different options or templates)."""
    try:
        key: Any = (tool_name, reasoning_name, _freeze(dict(tpl_opts)))
    except TypeError:
        return _make_plan(tpl, tool_name, reasoning_name, tpl_opts)
    if tpl is None:
        cache = _BARE_PLANS
    else:
        try:
            cache = _PLANS.setdefault(tpl, {})
        except TypeError:  # a template object that cannot be weakly referenced
            return _make_plan(tpl, tool_name, reasoning_name, tpl_opts)
    plan = cache.get(key)
    if plan is None:
        if len(cache) >= _PLANS_PER_TEMPLATE:
            cache.clear()
        plan = cache[key] = _make_plan(tpl, tool_name, reasoning_name, tpl_opts)
    return plan


def _make_plan(
    tpl: Any, tool_name: str, reasoning_name: str | None, tpl_opts: Mapping[str, Any]
) -> _Plan:
    tool_cls = TOOL_PARSERS[tool_name]
    reasoning = REASONING_PARSERS[reasoning_name] if reasoning_name is not None else None
    family = set(tool_cls.special_markers) | set(getattr(tool_cls, "starts", {}) or ())
    if reasoning is not None:
        family.update(getattr(reasoning, "special_markers", ()))
    words = (
        _end_markers(tpl, family)
        if tpl is not None
        else tuple(w for w in tool_cls.end_of_turn if w not in family)
    )
    return _Plan(
        tool_cls=tool_cls,
        reasoning=reasoning,
        markers=frozenset(family | set(words)),
        prefilled=(
            None
            if reasoning is None
            else getattr(reasoning, "starts_inside", False)
            or _prefilled(tpl, tpl_opts, getattr(reasoning, "open_marker", "<think>"))
        ),
        end_markers=MarkerSet(words, words) if words else None,
        after=_after_end_of_turn(tpl, tpl_opts, words) if words and tpl is not None else "",
        separators=probe_separators(tpl, tpl_opts),
    )


def end_of_turn_markers(
    template: Any, *, request: ParseRequest | None = None, **kwargs: Any
) -> tuple[str, ...]:
    """The end-of-turn markers a parse for ``template`` (name or object) ends the turn at.

    They are the template's ``generation_config.stop_words`` except any that the
    family's parsers read as their own markup; for a bare parser name, those its parser
    declares (a parser of one family only, e.g. ``gigachat3``'s ``</s>``), else ``()``.
    Keywords: those of :class:`StreamParser`.
    """
    plan = _setup(template, ParseRequest.from_kwargs(kwargs, request))[2]
    return plan.end_markers.markers if plan.end_markers is not None else ()


def _end_markers(tpl: Any, family_markers: Iterable[str] = ()) -> tuple[str, ...]:
    """The template's stop words, except the family parser's own markup."""
    if tpl is None:
        return ()
    own = set(family_markers)
    return tuple(w for w in tpl.generation_config.stop_words if w and w not in own)


_PROBE_ANSWER = "chatfmt probe answer"


def _after_end_of_turn(tpl: Any, tpl_opts: Mapping[str, Any], words: Sequence[str]) -> str:
    """The whitespace the template writes right after the end-of-turn marker of an answer."""
    try:
        text = tpl.render(
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": _PROBE_ANSWER}],
            add_generation_prompt=False,
            **tpl_opts,
        )
    except ChatFmtError:
        return ""
    at = text.rfind(_PROBE_ANSWER)
    if at < 0:
        return ""
    hits = [(i, w) for w in words if (i := text.find(w, at)) >= 0]
    if not hits:
        return ""
    i, word = min(hits, key=lambda h: (h[0], -len(h[1])))
    rest = text[i + len(word) :]
    return rest[: len(rest) - len(rest.lstrip(WS))]


class StreamParser:
    """Parse model output as it streams: ``feed(chunk) -> deltas``, then ``finish()``.

    Deltas are typed (:class:`ContentDelta`, :class:`ReasoningDelta`,
    :class:`ToolCallDelta`); :func:`~chatfmt.parsing.openai_wire.delta_dict` gives
    the ``chat.completion.chunk`` delta of one.

    ``template`` is a template (object, name, alias, model id, path or source: its
    ``tool_parser`` and ``reasoning_parser`` choose the parsers) or a parser name such
    as ``"hermes"``. The parser options are a :class:`~chatfmt.ParseRequest`, given as
    ``request=`` or as its fields by keyword: ``tools``, ``parser`` (forces the tool
    parser; a template given too still chooses the reasoning parser),
    ``reasoning_parser`` (overrides it; ``None``: none), ``thinking_prefilled``,
    ``special_token_ids`` or ``tokenizer``, ``id_factory``. Any other keyword is a
    template option (e.g. ``enable_thinking``, used to derive the prefill); unknown
    option names raise :class:`ParseError`.

    With a template, the output ends at its end-of-turn marker (a stop word such
    as ``<|im_end|>``, given or not): text after it is :attr:`trailing_text`, and
    :attr:`finish_reason` tells how the message ended; both are set by
    :meth:`finish` (before it: ``None`` and ``""``).
    """

    def __init__(
        self, template: Any = None, *, request: ParseRequest | None = None, **kwargs: Any
    ) -> None:
        req = ParseRequest.from_kwargs(kwargs, request)
        _, tool_name, plan = _setup(template, req)
        id_factory = req.id_factory or (
            mistral_call_id if tool_name == "mistral" else openai_call_id
        )
        self.out = Emitter(id_factory, _tool_schemas(req.tools), plan.separators)
        given_ids, tokenizer = req.special_token_ids, req.tokenizer
        marker_ids = (
            _marker_ids(plan.markers, given_ids, tokenizer) if given_ids or tokenizer else {}
        )
        self.budget = SpecialTokens(marker_ids, tokenizer)
        opts = dict(req.options)
        if req.thinking_prefilled is not None:
            opts["thinking_prefilled"] = req.thinking_prefilled
        elif plan.reasoning is not None:
            opts["thinking_prefilled"] = plan.prefilled
        inner = plan.tool_cls(self.out, self.budget, opts)
        self._parser: FormatParser = (
            plan.reasoning(inner, self.out, self.budget, opts) if plan.reasoning else inner
        )
        self._end = EndOfTurn(plan.end_markers, plan.after, self.budget)
        self._done = False
        #: How the message ended (set by :meth:`finish`): "stop", "tool_calls" or "length".
        self.finish_reason: FinishReason | None = None
        #: What the model wrote after its end-of-turn marker (set by :meth:`finish`).
        self.trailing_text = ""

    @property
    def in_answer(self) -> bool:
        """Whether the output read so far is past its reasoning block: the text now goes to the
        answer (content and tool calls). Always True without a reasoning parser; with one,
        False until it has read the block's end (or found the output has none)."""
        return self._parser.in_answer

    @property
    def reasoning_opened(self) -> bool:
        """Whether the output was inside a reasoning block (opened by the model or by the
        prompt), even one with no reasoning text."""
        return bool(getattr(self._parser, "opened", False))

    def end_reasoning_at_calls(self) -> None:
        """Before any feed: a call marker inside the reasoning block ends it at once, even
        where the block closes later (an engine that hands a call to its tool parser as it
        streams; :meth:`~chatfmt.parsing.reasoning.ThinkParser.end_at_calls`)."""
        eager = getattr(self._parser, "end_at_calls", None)
        if eager is not None:
            eager()

    def keep_reasoning_whitespace(self) -> None:
        """Before any feed: reasoning and answer keep the whitespace next to the reasoning
        markers, and the answer the whitespace its template writes before it (an engine whose
        reasoning API returns the text as written); no change without a reasoning parser."""
        keep = getattr(self._parser, "keep_whitespace", None)
        if keep is not None:
            keep()
            if self.out.separators.before_content:
                self.out.separators = dataclasses.replace(self.out.separators, before_content="")

    def feed(self, text: str, token_ids: Sequence[int] | None = None) -> list[Delta]:
        """Feed the next chunk of output text (and the ids of the tokens it is the text of).

        With ``token_ids`` (and known marker ids), a marker counts only where a
        special token of it is; ordinary tokens spelling a marker are text (see
        ``docs/parsing.md``, *Special tokens and look-alikes*). Raises
        :class:`ParseError` if one chunk holds both real and look-alike copies of a
        marker and no ``tokenizer`` was given to locate them. Text after the
        end-of-turn marker gives no deltas (it becomes :attr:`trailing_text`).
        """
        if self._done:
            raise ParseError("feed() after finish()")
        if not isinstance(text, str):
            raise ParseError(f"feed() takes the output text as a str, got {type(text).__name__}")
        end = self._end
        if end.seen:
            end.feed(text)
            return []
        self.budget.feed(text, token_ids)
        turn = end.feed(text)
        if turn:
            self._parser.feed(turn)
        if self.budget.active:
            self.budget.prune(min(end.low_water(), self._parser.low_water()))
        out = self.out
        deltas, out.deltas = out.deltas, []  # out.take(), inline: once per chunk
        return deltas

    def finish(self, truncated: bool = False) -> list[Delta]:
        """End of stream: release held-back text, close or flag open calls, set :attr:`finish_reason`.

        ``truncated=True`` says generation stopped at its token limit: the reason is
        ``"length"`` unless an end-of-turn marker was seen.
        """
        if not self._done:
            self._done = True
            held = self._end.finish()
            if held:
                self._parser.feed(held)
            self._parser.finish()
            self.out.end()
            self.trailing_text = self._end.trailing_text
            if truncated and not self._end.seen:
                self.finish_reason = "length"
            else:
                self.finish_reason = "tool_calls" if self.out.calls else "stop"
        return self.out.take()


def _marker_ids(
    markers: Iterable[str], given: Mapping[str, int] | None, tokenizer: Any
) -> dict[str, int]:
    """Ids of the special markers the parsers may meet (given, else looked up in the tokenizer)."""
    markers = set(markers)
    ids = {m: tid for m, tid in (given or {}).items() if m in markers}
    if tokenizer is not None:
        lookup = (
            getattr(tokenizer, "token_to_id", None)  # tokenizers.Tokenizer
            or getattr(tokenizer, "convert_tokens_to_ids", None)  # transformers
            or getattr(tokenizer, "token_id", None)  # chatfmt.tokens.Tokenizer
        )
        for marker in markers:
            if marker in ids or lookup is None:
                continue
            tid = lookup(marker)
            unk = getattr(tokenizer, "unk_token_id", None)
            if isinstance(tid, int) and tid != unk:
                ids[marker] = tid
    return ids


def _prefilled(tpl: Any, tpl_opts: Mapping[str, Any], opener: str = "<think>") -> bool:
    """Whether the template's generation prompt opens a reasoning block (ends with ``opener``)."""
    if tpl is None:
        return False
    try:
        prompt = tpl.render(
            [{"role": "user", "content": "x"}], add_generation_prompt=True, **tpl_opts
        )
    except ChatFmtError:  # a template that cannot render a bare question: assume no prefill
        return False
    tail = prompt.rstrip()
    return tail.endswith(opener)


def parse(
    text: str,
    template: Any = None,
    *,
    request: ParseRequest | None = None,
    truncated: bool = False,
    token_ids: Sequence[int] | None = None,
    **kwargs: Any,
) -> ParsedMessage:
    """Parse complete model output into an OpenAI assistant message.

    The same as feeding ``text`` (and ``token_ids``, its ids, if given) to a
    :class:`StreamParser` at once and merging the deltas (:func:`merge_deltas`);
    ``request`` and the keywords are those of :class:`StreamParser`.
    The result is a :class:`ParsedMessage`: it reads as the OpenAI message
    (``msg["content"]``, ``dict(msg)``, ``msg.to_openai()``) and has typed fields,
    ``finish_reason`` and ``trailing_text``; ``truncated=True`` says generation hit
    its token limit.
    """
    if not isinstance(text, str):
        raise ParseError(f"parse() takes the model output as a str, got {type(text).__name__}")
    sp = StreamParser(template, request=request, **kwargs)
    deltas = sp.feed(text, token_ids=token_ids)
    deltas += sp.finish(truncated=truncated)
    return merge_deltas(deltas, finish_reason=sp.finish_reason, trailing_text=sp.trailing_text)
