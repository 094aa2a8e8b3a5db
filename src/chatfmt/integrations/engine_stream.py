"""The engine-neutral core of chatfmt's parser plugins for serving engines (vLLM, SGLang, LMDeploy).

An engine builds a parser object per request (often per choice, plus throwaway ones), feeds
it the new text of each decoding step and, at the end of a stream, reads a few fields of
bookkeeping to send what was not sent yet. This module is the part every engine adapter
shares; the adapters only translate its results into the engine's own message types.

* :func:`stream_plan` returns a :class:`StreamPlan`, cached by tokenizer identity, target
  (a template, template name or parser name), parser choices and template options. It holds
  what a :class:`~chatfmt.parsing.StreamParser` needs that does not change per request (the
  resolved template, the marker token ids), so a request costs no template work.
* :meth:`StreamPlan.stream` starts an :class:`EngineStream` (cheap: one ``StreamParser``).
* :meth:`EngineStream.feed` takes the next text piece (and its token ids, when the engine
  has them) and returns a :class:`Step`: ``content`` and ``reasoning`` text (``""`` when
  none) and ``calls``, the tool-call pieces in stream order (:class:`CallPiece`: ``index``;
  ``id`` and ``name`` on a call's first piece only; ``arguments``, the argument text to
  append; ``error`` when chatfmt flags the call). :meth:`EngineStream.finish` ends the stream
  (held-back text, calls cut off) and returns the last :class:`Step`.
* The bookkeeping the engines' serving layers read at stream end is kept after every step:
  ``prev_tool_call_arr`` (one ``{"name", "arguments"}`` per call, ``arguments`` the argument
  text streamed so far), ``streamed_args_for_tool`` (the same text per call) and
  ``current_tool_id`` (index of the last call, ``-1`` before any). The two lists are made
  when read (the argument pieces are joined then, so a stream stays linear in its length). The two lists always
  agree, so an engine's "send the rest of the arguments" step
  (``prev_tool_call_arr[-1]["arguments"]`` minus ``streamed_args_for_tool[-1]``) sends
  nothing twice: every argument piece has already been returned in a :class:`Step`.
* A call chatfmt flags (unknown tool, arguments that are not a JSON object, cut off) stays a
  call with its text as arguments, streamed and whole; ``error`` says why. Code-interpreter
  calls (``code=True``, named ``"code_interpreter"``) carry their code as ``arguments``.
* :func:`extract` is the whole-text path: the same stream fed once, giving
  ``(content, reasoning, calls)`` as an :class:`Extracted` (with ``reasoning_block``: whether
  the output had a reasoning block, even an empty one).
* :meth:`EngineStream.catch_up` serves a caller that passes the text before the new piece
  without having fed it (a test, a serving layer that is not engine-based): the part not fed
  yet is fed and its step discarded (it counts as sent). ``verbatim`` streams
  (``StreamParser.keep_reasoning_whitespace``) keep the whitespace next to the reasoning markers, for an engine
  whose reasoning API returns the text as written; ``eager_calls`` ones end a reasoning block
  at a call marker at once, for an engine that cannot take back a hand-over to its tool
  parser.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..parsing import ContentDelta, Delta, ReasoningDelta, StreamParser, ToolCallDelta
from ..parsing.base import _setup
from ..parsing.deltas import ParsedToolCall, merge_deltas
from ..requests import FromTemplate, ParseRequest

__all__ = [
    "CallPiece",
    "EngineStream",
    "Extracted",
    "Step",
    "StreamPlan",
    "extract",
    "stream_plan",
    "tool_dicts",
]


@dataclass(frozen=True, slots=True)
class CallPiece:
    """A piece of tool call ``index``: ``id`` and ``name`` on its first piece only."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    error: str | None = None
    code: bool = False


@dataclass(slots=True)
class Step:
    """What one ``feed``/``finish`` added: content, reasoning and tool-call pieces."""

    content: str = ""
    reasoning: str = ""
    calls: list[CallPiece] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.content or self.reasoning or self.calls)


@dataclass(frozen=True, slots=True)
class Extracted:
    """A whole output, parsed: ``content``/``reasoning`` are ``None`` when there is none;
    ``reasoning_block``: the output was inside a reasoning block (opened by the model or the
    prompt), even one with no text."""

    content: str | None
    reasoning: str | None
    calls: tuple[ParsedToolCall, ...]
    finish_reason: str
    reasoning_block: bool = False


def _step(deltas: Iterable[Delta]) -> Step:
    step = Step()
    content: list[str] = []
    reasoning: list[str] = []
    for delta in deltas:
        kind = type(delta)
        if kind is ContentDelta:
            content.append(delta.text)
        elif kind is ReasoningDelta:
            reasoning.append(delta.text)
        elif kind is ToolCallDelta:
            d: ToolCallDelta = delta  # type: ignore[assignment]
            step.calls.append(CallPiece(d.index, d.id, d.name, d.text, d.error, d.code))
    step.content = "".join(content)
    step.reasoning = "".join(reasoning)
    return step


class EngineStream:
    """One request's stream: ``feed`` text pieces, then ``finish`` (see module doc)."""

    __slots__ = ("_args", "_fed", "_fed_ids", "_names", "_parser", "current_tool_id", "errors")

    def __init__(self, parser: StreamParser) -> None:
        self._parser = parser
        #: Index of the last call started (``-1`` before any).
        self.current_tool_id = -1
        #: Why each flagged call is invalid (call index → reason).
        self.errors: dict[int, str] = {}
        self._names: list[str] = []
        self._args: list[list[str]] = []  # argument pieces per call, joined when read
        self._fed = 0  # characters fed so far
        self._fed_ids = 0  # token ids fed so far

    @property
    def parser(self) -> StreamParser:
        """The underlying :class:`~chatfmt.parsing.StreamParser`."""
        return self._parser

    @property
    def in_answer(self) -> bool:
        """Whether the stream is past its reasoning block (see ``StreamParser.in_answer``)."""
        return self._parser.in_answer

    @property
    def finish_reason(self) -> str | None:
        """``"stop"``, ``"tool_calls"`` or ``"length"`` once finished, else ``None``."""
        return self._parser.finish_reason

    @property
    def streamed_args_for_tool(self) -> list[str]:
        """The argument text sent per call (a new list; joined once per read)."""
        out = []
        for pieces in self._args:
            if len(pieces) > 1:
                pieces[:] = ["".join(pieces)]
            out.append(pieces[0] if pieces else "")
        return out

    @property
    def prev_tool_call_arr(self) -> list[dict[str, Any]]:
        """One ``{"name", "arguments"}`` per call: the argument text streamed so far."""
        return [
            {"name": name, "arguments": args}
            for name, args in zip(self._names, self.streamed_args_for_tool)
        ]

    def feed(self, text: str, token_ids: Sequence[int] | None = None) -> Step:
        """The next piece of output text (and the ids of its tokens, when known)."""
        self._fed += len(text)
        if token_ids:
            self._fed_ids += len(token_ids)
        step = _step(self._parser.feed(text, token_ids))
        if step.calls:
            self._book(step.calls)
        return step

    def catch_up(
        self, previous_text: str | None, previous_token_ids: Sequence[int] | None = None
    ) -> None:
        """Feed the end of ``previous_text`` this stream has not seen, discarding its step.

        For a caller that hands over the text before the new piece (``previous_text``) without
        having fed it here: what that earlier text decided counts as already sent, and what the
        parser held back of it (a possible marker) is released with the next piece. Only the
        lengths are compared (``previous_text`` is taken to continue what was fed), so a
        stream whose caller passes nothing, or exactly what was fed, costs nothing.
        """
        if not previous_text or len(previous_text) <= self._fed:
            return
        ids: Sequence[int] | None = previous_token_ids or ()
        ids = ids[self._fed_ids :] if ids and len(ids) > self._fed_ids else None
        self.feed(previous_text[self._fed :], ids)

    def finish(self, truncated: bool = False) -> Step:
        """End of stream (``truncated``: generation hit its token limit)."""
        step = _step(self._parser.finish(truncated=truncated))
        if step.calls:
            self._book(step.calls)
        return step

    def _book(self, pieces: list[CallPiece]) -> None:
        names, args = self._names, self._args
        for piece in pieces:
            i = piece.index
            while len(names) <= i:
                names.append("")
                args.append([])
            if piece.name is not None:
                names[i] = piece.name
            if piece.arguments:
                args[i].append(piece.arguments)
            if piece.error is not None:
                self.errors[i] = piece.error
            if i > self.current_tool_id:
                self.current_tool_id = i

    def arguments_object(self, index: int) -> Any:
        """The decoded arguments of call ``index`` (``None`` if they are not valid JSON)."""
        try:
            return json.loads(self.streamed_args_for_tool[index])
        except (ValueError, IndexError, RecursionError):
            return None


def tool_dicts(tools: Iterable[Any] | None) -> list[dict[str, Any]] | None:
    """OpenAI tool dicts from engine tool objects (pydantic models, dataclasses or dicts)."""
    if tools is None:
        return None
    out: list[dict[str, Any]] = []
    for tool in tools:
        if isinstance(tool, Mapping):
            out.append(dict(tool))
            continue
        dump = getattr(tool, "model_dump", None)
        if dump is not None:
            data = dump(exclude_none=True)
        else:
            data = {k: getattr(tool, k) for k in ("type", "function", "name") if hasattr(tool, k)}
        if not isinstance(data, Mapping):
            continue  # not a tool object (nothing to check call names or types against)
        if "function" not in data and "name" in data:  # a flat Responses-API function tool
            data = {"type": "function", "function": data}
        fn = data.get("function")
        if fn is not None and not isinstance(fn, Mapping):
            data["function"] = (
                fn.model_dump(exclude_none=True) if hasattr(fn, "model_dump") else vars(fn)
            )
        out.append(data)
    return out


class StreamPlan:
    """What every stream of one (tokenizer, target, parsers, options) shares; see module doc."""

    __slots__ = ("_tools_cache", "base", "marker_ids", "target", "tokenizer", "tool_parser")

    def __init__(self, target: Any, tokenizer: Any, request: ParseRequest) -> None:
        template, tool_name, plan = _setup(target, request)  # checks names and options now
        self.target = template if template is not None else target
        self.tool_parser = tool_name
        self.tokenizer = tokenizer
        self.base = request
        self.marker_ids = _marker_ids(plan.markers, tokenizer)
        self._tools_cache: dict[str, list[dict[str, Any]] | None] = {}

    def _tools(self, tools: Any) -> list[dict[str, Any]] | None:
        if not tools:
            return None
        dicts = tool_dicts(tools)
        try:
            key = json.dumps(dicts, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return dicts
        found = self._tools_cache.get(key)
        if found is None:
            if len(self._tools_cache) > 64:
                self._tools_cache.clear()
            found = self._tools_cache[key] = dicts
        return found

    def request(self, tools: Any = None) -> ParseRequest:
        """The :class:`~chatfmt.ParseRequest` of a stream with ``tools``."""
        return ParseRequest.from_kwargs(
            {
                "tools": self._tools(tools),
                "special_token_ids": self.marker_ids or None,
                "tokenizer": self.tokenizer,
            },
            self.base,
        )

    def stream(
        self, tools: Any = None, *, verbatim: bool = False, eager_calls: bool = False
    ) -> EngineStream:
        """A new :class:`EngineStream` (``tools``: OpenAI or engine tool objects).

        ``verbatim``: reasoning and answer keep the whitespace next to the reasoning markers
        (an engine whose reasoning API returns the text as written).
        ``eager_calls``: a call marker inside a reasoning block ends it at once, even where
        the block closes later (an engine that hands a call to its tool parser as it
        streams; :meth:`~chatfmt.parsing.reasoning.ThinkParser.end_at_calls`).
        """
        return EngineStream(_parser(self, tools, verbatim, eager_calls))


def _parser(plan: StreamPlan, tools: Any, verbatim: bool, eager_calls: bool) -> StreamParser:
    parser = StreamParser(plan.target, request=plan.request(tools))
    if verbatim:
        parser.keep_reasoning_whitespace()
    if eager_calls:
        parser.end_reasoning_at_calls()
    return parser


def _marker_ids(markers: Iterable[str], tokenizer: Any) -> dict[str, int]:
    if tokenizer is None:
        return {}
    from ..parsing.base import _marker_ids as lookup

    try:
        return lookup(markers, None, tokenizer)
    except Exception:  # an engine tokenizer without usable lookups: decide by text alone
        return {}


#: Plans per tokenizer object (dropped with it), then per (target, parsers, options) key.
_PLANS: weakref.WeakKeyDictionary[Any, dict[Any, StreamPlan]] = weakref.WeakKeyDictionary()
_BARE: dict[Any, StreamPlan] = {}


def stream_plan(
    target: Any,
    *,
    tokenizer: Any = None,
    parser: str | None = None,
    reasoning_parser: str | FromTemplate | None = FromTemplate.TEMPLATE,
    thinking_prefilled: bool | None = None,
    **options: Any,
) -> StreamPlan:
    """The cached :class:`StreamPlan` for ``target`` (template or parser name) and ``tokenizer``.

    ``parser``/``reasoning_parser``/``thinking_prefilled`` and template ``options`` are those
    of :class:`~chatfmt.parsing.StreamParser`.
    """
    try:
        key: Any = (
            target,
            parser,
            reasoning_parser,
            thinking_prefilled,
            tuple(sorted(options.items())),
        )
        hash(key)
    except TypeError:
        key = None
    cache: dict[Any, StreamPlan] | None = None
    if key is not None:
        if tokenizer is None:
            cache = _BARE
        else:
            try:
                cache = _PLANS.setdefault(tokenizer, {})
            except TypeError:  # not weakly referenceable
                cache = None
        if cache is not None and key in cache:
            return cache[key]
    request = ParseRequest(
        parser=parser,
        reasoning_parser=reasoning_parser,
        thinking_prefilled=thinking_prefilled,
        options=options,
    )
    plan = StreamPlan(target, tokenizer, request)
    if cache is not None:
        cache[key] = plan
    return plan


def extract(
    plan: StreamPlan,
    text: str,
    *,
    tools: Any = None,
    token_ids: Sequence[int] | None = None,
    truncated: bool = False,
    verbatim: bool = False,
    eager_calls: bool = False,
) -> Extracted:
    """Parse a whole output: the stream of ``plan`` fed ``text`` once (see module doc;
    ``verbatim`` and ``eager_calls`` as in :meth:`StreamPlan.stream`)."""
    parser = _parser(plan, tools, verbatim, eager_calls)
    deltas = parser.feed(text, token_ids)
    deltas += parser.finish(truncated=truncated)
    msg = merge_deltas(deltas, finish_reason=parser.finish_reason)
    return Extracted(
        msg.content,
        msg.reasoning_content,
        msg.tool_calls,
        msg.finish_reason,
        parser.reasoning_opened,
    )
