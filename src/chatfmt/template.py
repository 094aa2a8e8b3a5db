"""The template base class: render a validated conversation into segments."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .config import GenerationConfig
from .errors import TemplateError, UnsupportedFeatureError, ValidationError
from .history_rules import KEEPS_ALL, Drop, HistoryRules
from .protocol import Conversation, Message, validate_conversation
from .requests import RenderRequest, parse_now
from .segments import Kind, Segment, SegmentBuilder, TextSink, join, truncate_after_content

if TYPE_CHECKING:
    from .parsing.base import FormatParser

#: The keywords of every render call, for error messages.
RENDER_KEYWORDS = ", ".join(sorted(RenderRequest.KEYWORDS))
#: Texts of the probe turn used to render a follow-up turn (``sequence_start=False``).
PROBE_USER = "chatfmt probe question"
PROBE_ASSISTANT = "chatfmt probe answer"


class RenderContext:
    """Per-call settings a template may read: the generation-prompt flag, the date, options.

    ``builder`` makes the segment builder a template writes to: :class:`SegmentBuilder`,
    or :class:`TextSink` (``text_only=True``, what ``Template.render`` uses) when only the
    prompt string is wanted, so the same template code produces it without segment
    bookkeeping.
    """

    __slots__ = (
        "_now",
        "add_generation_prompt",
        "builder",
        "lossless",
        "options",
        "strict_history",
    )

    def __init__(
        self,
        add_generation_prompt: bool = True,
        now: _dt.date | _dt.datetime | str | None = None,
        options: Mapping[str, Any] | None = None,
        text_only: bool = False,
        strict_history: bool = False,
        lossless: bool = False,
    ) -> None:
        self.add_generation_prompt = add_generation_prompt
        #: Refuse what the official template cannot write whole (see :func:`text_beside_calls`).
        self.strict_history = strict_history
        #: Refuse what the format's own rules leave out (:attr:`Template.history`).
        self.lossless = lossless
        self.options: Mapping[str, Any] = options if options is not None else {}
        self._now = None if now is None else parse_now(now)
        self.builder: type[SegmentBuilder] = TextSink if text_only else SegmentBuilder

    @property
    def datetime(self) -> _dt.datetime:
        """The time of the call (``now=`` of the call, else the current time; read lazily)."""
        if self._now is None:
            self._now = _dt.datetime.now()
        return self._now

    @property
    def now(self) -> _dt.date:
        """The date templates print (``now=`` of the call, else today)."""
        return self.datetime.date()

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


class Template(ABC):
    """A chat format: renders conversations to segments and carries generation settings.

    Subclasses implement :meth:`render_conversation` for a whole conversation from
    the start of a sequence. Everything else (``continue_final_message``,
    ``sequence_start=False``, validation, completion templates) is done here once.
    """

    name: str = ""
    aliases: tuple[str, ...] = ()
    #: Hugging Face model ids this template is the official format of.
    model_ids: tuple[str, ...] = ()
    #: Regular expressions matched against a lower-cased model name (last path part).
    model_patterns: tuple[str, ...] = ()
    generation_config: GenerationConfig = GenerationConfig()
    description: str = ""
    #: Source of truth, e.g. ``"official Jinja: Qwen-Qwen3-0.6B.jinja"`` or ``"seed: InternLM2 chat format"``.
    source: str = ""
    supports_tools: bool = False
    supports_reasoning: bool = False
    #: Control strings that only the template may produce (special tokens and markers).
    control_tokens: tuple[str, ...] = ()
    #: Control strings shaped like special tokens that the model's own tokenizer encodes as
    #: ordinary text (Zephyr's ``<|user|>``); the others must each be one special id.
    text_control_tokens: tuple[str, ...] = ()
    #: Names of template variables accepted as ``**options``, with their defaults.
    default_options: ClassVar[Mapping[str, Any]] = {}
    #: Official Jinja files (in ``chatfmt/data/templates/``) this template reproduces byte for byte.
    official_templates: tuple[str, ...] = ()
    #: The tool-call parser class a template declares (e.g. ``HermesParser``); sets :attr:`tool_parser`.
    tool_parser_class: type[FormatParser] | None = None
    #: The reasoning parser class a template declares (e.g. ``ThinkParser``); sets :attr:`reasoning_parser`.
    reasoning_parser_class: type[FormatParser] | None = None
    #: Name of the output parser for tool calls (see :mod:`chatfmt.parsing`), e.g. ``"hermes"``.
    tool_parser: str | None = None
    #: Name of the reasoning parser, e.g. ``"think"`` for ``<think>…</think>`` blocks.
    reasoning_parser: str | None = None
    #: Whether an earlier turn renders the same once later turns follow. False for formats
    #: that move text to the last turn (Mistral v3 puts the system prompt in the last user
    #: turn): for them an engine's cached prefix is not the new full render.
    prefix_stable: bool = True
    #: The tool format (see :mod:`chatfmt.tool_format`) that ``chatfmt chat`` and ``chatfmt
    #: serve`` pair this template with when it has none of its own and none is chosen.
    default_tool_format: str | None = None
    #: What the format leaves out of the history by its own rules (earlier turns'
    #: reasoning, tool definitions it has no section for): see :mod:`chatfmt.history_rules`.
    history: HistoryRules = KEEPS_ALL

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A declared parser class names the parser (the names stay the public handle).
        for kind in ("tool_parser", "reasoning_parser"):
            declared = cls.__dict__.get(f"{kind}_class")
            if declared is not None and kind not in cls.__dict__:
                setattr(cls, kind, declared.name)

    def set_parsers(
        self,
        tool: type[FormatParser] | str | None,
        reasoning: type[FormatParser] | str | None,
        *,
        tool_name: str | None = None,
    ) -> None:
        """Set this template's parsers, each given as a parser class or a registered name;
        ``tool_name`` shows the tool parser by one of its aliases."""
        self.tool_parser, self.tool_parser_class = _parser_ref(tool)
        self.reasoning_parser, self.reasoning_parser_class = _parser_ref(reasoning)
        if tool_name is not None:
            self.tool_parser = tool_name

    # ------------------------------------------------------------------ subclass API
    @abstractmethod
    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        """Render ``conv`` from the start of a sequence (with BOS, default system, …)."""

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Reject unknown options. Templates with free-form variables override this."""
        unknown = set(options) - set(self.default_options)
        if unknown:
            known = ", ".join(sorted(self.default_options)) or "none"
            raise TemplateError(
                f"template {self.name!r} has no option(s) {', '.join(sorted(unknown))} "
                f"(known options: {known}; render keywords: {RENDER_KEYWORDS})"
            )

    # ------------------------------------------------------------------ public API
    def segments(
        self, messages: Any, *, request: RenderRequest | None = None, **kwargs: Any
    ) -> list[Segment]:
        """Render to segments. Same arguments as :meth:`render`."""
        return self._segments(messages, RenderRequest.from_kwargs(kwargs, request))

    def render(self, messages: Any, *, request: RenderRequest | None = None, **kwargs: Any) -> str:
        """Render messages to the prompt string (the join of :meth:`segments`).

        ``request`` (a :class:`~chatfmt.RenderRequest`) or its fields as keywords
        (``tools``, ``add_generation_prompt``, ``continue_final_message``,
        ``sequence_start``, ``now``); any other keyword is a template option.
        ``sequence_start=False`` renders only what the given new messages add after
        a previous turn whose reply (with its stop token) the engine already holds.
        """
        return self._render(messages, RenderRequest.from_kwargs(kwargs, request))

    def drops(
        self, messages: Any, *, request: RenderRequest | None = None, **kwargs: Any
    ) -> list[Drop]:
        """What rendering ``messages`` leaves out by the format's own rules (:attr:`history`):
        one :class:`~chatfmt.history_rules.Drop` (message index, field, reason) per piece.
        Same arguments as :meth:`render`; ``lossless=True`` makes that render raise instead."""
        req = RenderRequest.from_kwargs(kwargs, request)
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        conv = validate_conversation(messages, req.tools, require_tool_calls=req.sequence_start)
        return self._drops(conv, self._context(req))

    def _drops(self, conv: Conversation, ctx: RenderContext) -> list[Drop]:
        return self.history.drops(
            conv,
            add_generation_prompt=ctx.add_generation_prompt,
            options=ctx.options,
            supports_tools=self.supports_tools,
        )

    # ------------------------------------------------------------------ request API
    def _segments(self, messages: Any, request: RenderRequest) -> list[Segment]:
        """The segments of ``messages`` for ``request`` (what :meth:`segments` runs)."""
        continued = request.continue_final_message
        # Same rule as transformers: both at once is contradictory; the final
        # message is continued, so the generation prompt is dropped.
        ctx = self._context(
            request, add_generation_prompt=request.add_generation_prompt and not continued
        )
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        tools, sequence_start = request.tools, request.sequence_start
        conv, segs = self._render_segments(messages, tools, ctx, sequence_start)
        if continued and (conv.messages or sequence_start):
            last = _final_message(conv)
            if last.role == "assistant" and not any(s.message == last.index for s in segs):
                # Nothing traceable belongs to the (empty) final reply, e.g. a Jinja template
                # whose output holds no text of it: the open turn is the generation prompt.
                head: Any = (
                    messages[:-1]
                    if isinstance(messages, Sequence)
                    else Conversation(conv.messages[:-1], conv.tools)
                )
                gen_ctx = RenderContext(
                    True,
                    ctx.datetime,
                    ctx.options,
                    strict_history=ctx.strict_history,
                    lossless=ctx.lossless,
                )
                return self._render_segments(head, tools, gen_ctx, sequence_start)[1]
            segs = truncate_after_content(segs, last.index)
        return segs

    def _render(self, messages: Any, request: RenderRequest) -> str:
        """The prompt string of ``messages`` for ``request`` (what :meth:`render` runs)."""
        if request.sequence_start and not request.continue_final_message:
            # What _segments() does for this case, writing to a TextSink: the same template code.
            ctx = self._context(request, text_only=True)
            if isinstance(messages, str):
                messages = [{"role": "user", "content": messages}]
            return join(self._render_segments(messages, request.tools, ctx, True)[1])
        return join(self._segments(messages, request))

    def info(self) -> dict[str, Any]:
        """A JSON-friendly description (used by the CLI and docs)."""
        return {
            "name": self.name,
            "aliases": list(self.aliases),
            "model_ids": list(self.model_ids),
            "source": self.source,
            "description": self.description,
            "supports_tools": self.supports_tools,
            "supports_reasoning": self.supports_reasoning,
            "options": dict(self.default_options),
            "official_templates": list(self.official_templates),
            "tool_parser": self.tool_parser,
            "reasoning_parser": self.reasoning_parser,
            "prefix_stable": self.prefix_stable,
            "default_tool_format": self.default_tool_format,
            "history": self.history.to_dict(self.supports_tools),
            "generation_config": self.generation_config.to_dict(),
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    # ------------------------------------------------------------------ internals
    def _context(
        self,
        request: RenderRequest,
        text_only: bool = False,
        add_generation_prompt: bool | None = None,
    ) -> RenderContext:
        """The render context of one call (options checked and merged over the defaults)."""
        add_gen = (
            request.add_generation_prompt
            if add_generation_prompt is None
            else add_generation_prompt
        )
        options, strict, lossless = request.options, request.strict_history, request.lossless
        if not options:
            return RenderContext(
                add_gen, request.now, self.default_options, text_only, strict, lossless
            )
        self.check_options(options)
        merged = {**self.default_options, **options}
        return RenderContext(add_gen, request.now, merged, text_only, strict, lossless)

    def _render_segments(
        self, messages: Any, tools: Any, ctx: RenderContext, sequence_start: bool
    ) -> tuple[Conversation, list[Segment]]:
        """Validate ``messages`` and render them (from the sequence start or as a follow-up).

        The hook behind :meth:`segments`: returns the validated conversation (indices as
        the caller gave them) and its segments. ``continue_final_message`` is applied
        afterwards by the caller. Backends with their own validation override this.
        """
        conv = validate_conversation(messages, tools, require_tool_calls=sequence_start)
        if ctx.lossless:
            refuse_drops(self.name, self._drops(conv, ctx))
        if not self.supports_reasoning:
            for m in conv.messages:
                if m.reasoning_content:
                    refuse_reasoning(self.name, m)
        if self.generation_config.capability == "completion":
            return conv, _completion_segments(conv, self.name)
        if sequence_start:
            return conv, self.render_conversation(conv, ctx)
        if not conv.messages:
            return conv, []
        return conv, self._render_follow_up(conv, ctx)

    def _render_follow_up(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        """Render ``conv`` as what follows an earlier, already-answered turn.

        Renders a probe user/assistant exchange followed by the new messages and
        keeps what comes after the probe reply's trained segments (its text and
        end-of-turn marker, which the engine holds).
        """
        probe = (
            Message(role="user", content=PROBE_USER, source_role="user", index=0),
            Message(role="assistant", content=PROBE_ASSISTANT, source_role="assistant", index=1),
        )
        shifted = tuple(dataclasses.replace(m, index=m.index + 2) for m in conv.messages)
        full = Conversation(probe + shifted, conv.tools)
        try:
            segs = self.render_conversation(full, ctx)
        except ValidationError as exc:
            if exc.index is not None and exc.index >= 2:
                raise type(exc)(exc.reason, index=exc.index - 2, field=exc.field) from None
            raise
        return self._after_probe(segs, conv)

    def _after_probe(self, segs: Sequence[Segment], conv: Conversation) -> list[Segment]:
        """The segments after the probe reply (messages 0 and 1) of a follow-up render.

        Message indices are shifted back by two. Raises if a new message with text lost
        all its segments in the cut (the template moved it before the probe, e.g. a system
        prompt placed at the start of the sequence).
        """
        end = None
        for i, s in enumerate(segs):
            if s.message == 1 and s.trained:
                end = i
        if end is None:
            raise TemplateError(
                f"template {self.name!r} marks no trained end-of-turn for assistant replies; "
                "sequence_start=False is not available for it"
            )
        out = [
            Segment(s.text, s.kind, None if s.message is None else s.message - 2, s.trained)
            for s in segs[end + 1 :]
        ]
        owned = {s.message for s in out}
        for m in conv.messages:
            if m.content and m.index not in owned:
                raise UnsupportedFeatureError(
                    f"template {self.name!r} places this {m.role} message at the start of the "
                    "sequence, so it cannot be rendered as a follow-up (sequence_start=False); "
                    "render the whole conversation instead",
                    index=m.index,
                    field="role",
                )
        return out


# ----------------------------------------------------------------------------- refusals
# Shared checks for input an official template would drop without a word (docs/rendering.md: "No
# silent data loss"): chatfmt raises instead, naming the message and the field.


def refuse_text_with_calls(
    template: str, m: Message, *, dropped: str = "tool_calls", trimmed: bool = False
) -> None:
    """Refuse an assistant message with both text and tool calls where the format keeps one.

    ``dropped`` is the field the official template would lose: ``"tool_calls"`` (it writes
    calls only for null content) or ``"content"`` (it writes only the calls). ``""`` counts
    as no text; with ``trimmed`` (formats that trim all content) so does whitespace.
    """
    if m.tool_calls and m.content and (not trimmed or not m.content.isspace()):
        lost = "the calls" if dropped == "tool_calls" else "the text"
        raise UnsupportedFeatureError(
            f"template {template!r} cannot render tool calls together with text: the "
            f'official template would drop {lost} silently; send content null (or "") '
            "with tool calls and put the text in a separate assistant message",
            index=m.index,
            field=dropped,
        )


def text_beside_calls(
    template: str,
    m: Message,
    ctx: RenderContext,
    *,
    dropped: str = "tool_calls",
    trimmed: bool = False,
) -> bool:
    """Whether ``m`` has text beside its tool calls that the official template would not write.

    Such a message is what a parser gives for a reply with text before its calls (Llama 3.1
    and Mistral write this constantly). By default the template then writes it the way the
    model writes it: the text as given, right before the calls as the template writes them
    (the form the template's parser reads back), and this returns True. With
    ``ctx.strict_history`` it is refused instead (:func:`refuse_text_with_calls`: only the
    official bytes, or an error). ``dropped`` and ``trimmed`` as there.
    """
    if not m.tool_calls or not m.content or (trimmed and m.content.isspace()):
        return False
    if ctx.strict_history:
        refuse_text_with_calls(template, m, dropped=dropped, trimmed=trimmed)
    return True


def refuse_system_without_user(
    template: str, system: Message | None, rest: Sequence[Message]
) -> None:
    """Refuse a system prompt that the format writes into a user turn when there is none."""
    if system is not None and system.content and not any(m.role == "user" for m in rest):
        raise UnsupportedFeatureError(
            f"template {template!r} writes the system prompt into the first user turn and "
            "there is none (the official template would drop it silently); add a user message",
            index=system.index,
            field="content",
        )


def refuse_drops(template: str, drops: Sequence[Drop]) -> None:
    """``lossless=True``: refuse the first piece the format's rules would leave out."""
    if drops:
        d = drops[0]
        raise UnsupportedFeatureError(
            f"template {template!r} would leave out {d.field}: {d.reason} (lossless=True "
            "refuses it; render without lossless to let the format's rule apply)",
            index=d.index,
            field=d.field,
        )


def refuse_reasoning(template: str, m: Message, where: str = "") -> None:
    """Refuse ``reasoning_content`` that the format cannot write (``where`` says which turns)."""
    if m.reasoning_content:
        raise UnsupportedFeatureError(
            f"template {template!r} has no place for reasoning_content{where} (the official "
            "template would drop it silently); remove it or put it in content",
            index=m.index,
            field="reasoning_content",
        )


def refuse_reasoning_after_last_user(template: str, conv: Conversation) -> None:
    """Formats that never write ``reasoning_content``: refuse it in the current turn.

    The official template drops reasoning of every reply; before the last user message that
    is the documented exception (earlier turns lose their reasoning, as the model saw them).
    After it, the reasoning belongs to the turn being trained or continued: refused.
    """
    last_user = last_user_index(conv)
    for m in conv.messages:
        if m.index > last_user:
            refuse_reasoning(template, m, " after the last user message")


def last_user_index(conv: Conversation) -> int:
    """Index of the last user message (``-1`` when there is none)."""
    for m in reversed(conv.messages):
        if m.role == "user":
            return m.index
    return -1


def refuse_think_cut(template: str, m: Message, kept: str) -> None:
    """Refuse a reply of the current turn that the format cuts at ``</think>`` to ``kept``.

    (R1 distills, DeepSeek V3.1 and QwQ keep only the text after ``</think>`` of a reply;
    before the last user message that is the documented exception.) Only think markup
    and whitespace may be cut: an empty ``<think></think>`` block is accepted.
    """
    text = m.text
    cut = text[: len(text) - len(kept)] if text.endswith(kept) else text
    if cut.replace("<think>", "").replace("</think>", "").strip():
        raise UnsupportedFeatureError(
            f"template {template!r} keeps only the text after '</think>' of a reply (the "
            "official template would drop the reasoning before it silently); this message is "
            "after the last user message, so remove the <think>…</think> part",
            index=m.index,
            field="content",
        )


def _final_message(conv: Conversation) -> Message:
    """The message ``continue_final_message`` leaves open (checked: it exists, has no tool calls)."""
    if not conv.messages:
        raise ValidationError("continue_final_message needs at least one message", field="messages")
    last = conv.messages[-1]
    if last.tool_calls:
        raise UnsupportedFeatureError(
            "continue_final_message cannot continue a message with tool calls (the cut would "
            "fall inside the call's text); continue its content without tool_calls instead",
            index=last.index,
            field="tool_calls",
        )
    return last


def _completion_segments(conv: Conversation, name: str) -> list[Segment]:
    """Completion (base) models: the prompt is returned unchanged.

    Only a plain prompt is accepted (a string or one message without tools): a base model
    has no roles, so several messages or tools would be silently lost.
    """
    if conv.tools:
        raise UnsupportedFeatureError(
            f"template {name!r} is a completion (base-model) format and has no tools",
            field="tools",
        )
    if len(conv.messages) > 1:
        raise UnsupportedFeatureError(
            f"template {name!r} is a completion (base-model) format: give one prompt (a string "
            "or one message); several messages would lose their roles",
            index=1,
            field="role",
        )
    for m in conv.messages:
        if m.tool_calls:
            raise UnsupportedFeatureError(
                f"template {name!r} is a completion (base-model) format and has no tool calls",
                index=m.index,
                field="tool_calls",
            )
    return [Segment(m.text, Kind.CONTENT, m.index, False) for m in conv.messages if m.text]


def _parser_ref(
    parser: type[FormatParser] | str | None,
) -> tuple[str | None, type[FormatParser] | None]:
    """(name, class) of a parser given as a class or a registered name."""
    if parser is None or isinstance(parser, str):
        return parser, None
    return parser.name, parser
