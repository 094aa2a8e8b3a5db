"""The template base class: render a validated conversation into segments."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .config import GenerationConfig
from .errors import TemplateError, ValidationError
from .protocol import Conversation, Message, validate_conversation
from .segments import Kind, Segment, join, text_only, truncate_after_content

#: Texts of the probe turn used to render a follow-up turn (``sequence_start=False``).
_PROBE_USER = "chatfmt probe question"
_PROBE_ASSISTANT = "chatfmt probe answer"


class RenderContext:
    """Per-call settings a template may read: the generation-prompt flag, the date, options."""

    __slots__ = ("_now", "add_generation_prompt", "options")

    def __init__(
        self,
        add_generation_prompt: bool = True,
        now: _dt.date | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.add_generation_prompt = add_generation_prompt
        self.options: Mapping[str, Any] = options if options is not None else {}
        self._now = now

    @property
    def now(self) -> _dt.date:
        """The date templates print (``now=`` of the call, else today; looked up only if read)."""
        if self._now is None:
            self._now = _dt.date.today()
        return self._now

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
    #: Names of template variables accepted as ``**options``, with their defaults.
    default_options: ClassVar[Mapping[str, Any]] = {}
    #: Official Jinja files (in ``chatfmt/data/templates/``) this template reproduces byte for byte.
    official_templates: tuple[str, ...] = ()
    #: Name of the output parser for tool calls (see :mod:`chatfmt.parsing`), e.g. ``"hermes"``.
    tool_parser: str | None = None
    #: Name of the reasoning parser, e.g. ``"think"`` for ``<think>…</think>`` blocks.
    reasoning_parser: str | None = None
    #: Whether an earlier turn renders the same once later turns follow. False for formats
    #: that move text to the last turn (Mistral v3 puts the system prompt in the last user
    #: turn): for them an engine's cached prefix is not the new full render.
    prefix_stable: bool = True

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
                f"(known options: {known})"
            )

    # ------------------------------------------------------------------ public API
    def segments(
        self,
        messages: Any,
        *,
        tools: Sequence[Any] | None = None,
        add_generation_prompt: bool = True,
        continue_final_message: bool = False,
        sequence_start: bool = True,
        now: _dt.date | _dt.datetime | str | None = None,
        **options: Any,
    ) -> list[Segment]:
        """Render to segments. Same arguments as :meth:`render`."""
        if continue_final_message and add_generation_prompt:
            # Same rule as transformers: both at once is contradictory; the final
            # message is continued, so the generation prompt is dropped.
            add_generation_prompt = False
        if options:
            self.check_options(options)
        ctx = RenderContext(
            add_generation_prompt=add_generation_prompt,
            now=None if now is None else _as_date(now),
            options={**self.default_options, **options} if options else self.default_options,
        )
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        conv = validate_conversation(messages, tools, require_tool_calls=sequence_start)
        if self.generation_config.capability == "completion":
            return _completion_segments(conv)
        if not conv.messages and not sequence_start:
            return []
        if sequence_start:
            segs = self.render_conversation(conv, ctx)
        else:
            segs = self._render_follow_up(conv, ctx)
        if continue_final_message:
            if not conv.messages:
                raise ValidationError(
                    "continue_final_message needs at least one message", field="messages"
                )
            segs = truncate_after_content(segs, len(conv.messages) - 1)
        return segs

    def render(
        self,
        messages: Any,
        *,
        tools: Sequence[Any] | None = None,
        add_generation_prompt: bool = True,
        continue_final_message: bool = False,
        sequence_start: bool = True,
        now: _dt.date | _dt.datetime | str | None = None,
        **options: Any,
    ) -> str:
        """Render messages to the prompt string (the join of :meth:`segments`).

        ``sequence_start=False`` renders only what the given new messages add after
        a previous turn whose reply (with its stop token) the engine already holds.
        """
        if sequence_start and not continue_final_message:
            # Same template code; the builder only collects text (see segments.text_only).
            with text_only():
                return join(
                    self.segments(
                        messages,
                        tools=tools,
                        add_generation_prompt=add_generation_prompt,
                        now=now,
                        **options,
                    )
                )
        return join(
            self.segments(
                messages,
                tools=tools,
                add_generation_prompt=add_generation_prompt,
                continue_final_message=continue_final_message,
                sequence_start=sequence_start,
                now=now,
                **options,
            )
        )

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
            "generation_config": self.generation_config.to_dict(),
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    # ------------------------------------------------------------------ internals
    def _render_follow_up(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        """Render ``conv`` as what follows an earlier, already-answered turn.

        Renders a probe user/assistant exchange followed by the new messages and
        keeps what comes after the probe reply's trained segments (its text and
        end-of-turn marker, which the engine holds).
        """
        probe = (
            Message(role="user", content=_PROBE_USER, source_role="user", index=0),
            Message(role="assistant", content=_PROBE_ASSISTANT, source_role="assistant", index=1),
        )
        shifted = tuple(dataclasses.replace(m, index=m.index + 2) for m in conv.messages)
        full = Conversation(probe + shifted, conv.tools)
        try:
            segs = self.render_conversation(full, ctx)
        except ValidationError as exc:
            if exc.index is not None and exc.index >= 2:
                raise type(exc)(exc.reason, index=exc.index - 2, field=exc.field) from None
            raise
        end = None
        for i, s in enumerate(segs):
            if s.message == 1 and s.trained:
                end = i
        if end is None:
            raise TemplateError(
                f"template {self.name!r} marks no trained end-of-turn for assistant replies; "
                "sequence_start=False is not available for it"
            )
        return [
            Segment(s.text, s.kind, None if s.message is None else s.message - 2, s.trained)
            for s in segs[end + 1 :]
        ]


def _as_date(now: _dt.date | _dt.datetime | str | None) -> _dt.date:
    if now is None:
        return _dt.date.today()
    if isinstance(now, _dt.datetime):
        return now.date()
    if isinstance(now, _dt.date):
        return now
    if isinstance(now, str):
        try:
            return _dt.date.fromisoformat(now[:10])
        except ValueError:
            raise ValidationError(
                f"now must be an ISO date (YYYY-MM-DD), got {now!r}", field="now"
            ) from None
    raise ValidationError(f"now must be a date, got {type(now).__name__}", field="now")


def _completion_segments(conv: Conversation) -> list[Segment]:
    """Completion (base) models: the prompt is returned unchanged."""
    return [Segment(m.text, Kind.CONTENT, m.index, False) for m in conv.messages if m.text]
