"""The pipeline every chat API shares: validate → render → backend request.

Each step is one function: :func:`validate` checks a :class:`~.request.ChatRequest`
(limits, options, tools, ``tool_choice``, messages) into a :class:`ChatInput`;
:func:`render` renders it with the turn layer (:func:`chatfmt.turn.render_prompt`) and adds
the ``tool_choice`` prefill, a :class:`Prepared` prompt; :func:`completion_request` is the
backend request (the template's stop words plus the request's). :class:`.generation.Generation`
then runs it through the template's :class:`~chatfmt.parsing.StreamParser` and checks the
reply; each API (:mod:`.openai_chat`, …) writes the typed deltas in its own wire shapes.

Structure is guaranteed both ways: :func:`render` compiles the request's tools,
``tool_choice``, ``parallel_tool_calls`` and ``response_format`` into one constraint
(:func:`chatfmt.constraints.compile_constraint`) that the backend sends in its engine's
dialect, and every reply is checked (:func:`chatfmt.constraints.check_reply`) before it is
returned: see :func:`.generation.reply_error` for what a client gets when it is not valid.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..backends.base import CompletionRequest
from ..constraints import Constraint, compile_constraint
from ..errors import ChatFmtError, UnsupportedFeatureError, ValidationError
from ..protocol import Conversation, Tool, validate_conversation, validate_tools
from ..template import Template
from ..tool_format import tool_format_names
from ..turn import Prompt, render_prompt
from .errors import APIError, api_error
from .models import Limits, ModelEntry
from .request import ChatRequest, WireToolChoice
from .tool_choice import prefill_for

log = logging.getLogger("chatfmt.gateway")


# ---------------------------------------------------------------------- validate
@dataclass(frozen=True)
class ChatInput:
    """A chat request, checked: the conversation to render and how to render and parse it."""

    entry: ModelEntry
    #: The messages, validated, with the tools the prompt offers (none for tool_choice "none").
    conversation: Conversation
    tools: list[Any] | None  # the tools the parser knows (None when not rendered)
    options: dict[str, Any]  # template (and parser) options: chat_template_kwargs
    tool_choice: WireToolChoice
    max_calls: int | None = None  # 1 for parallel_tool_calls: false
    response_format: dict[str, Any] | None = None  # json_object / json_schema (None: text)

    @property
    def function_tools(self) -> list[Any]:
        """The function tools offered (what the constraint and the check know)."""
        return [t for t in self.tools or () if t.get("type", "function") == "function"]

    @property
    def only_functions(self) -> bool:
        """Whether every offered tool is a function (a code interpreter is not constrained)."""
        return len(self.function_tools) == len(self.tools or ())

    @property
    def checked(self) -> bool:
        """Whether replies are validated: function tools were offered (and nothing else,
        such as a code interpreter), or a format was asked for."""
        return (bool(self.tools) and self.only_functions) or self.response_format is not None


def validate(entry: ModelEntry, request: ChatRequest, limits: Limits) -> ChatInput:
    """Check messages, tools, ``tool_choice`` and options (400s name the field).

    Messages and tools are validated once, here; the template and the tokenizer take the
    validated conversation as it is.
    """
    if len(request.messages) > limits.max_messages:
        raise APIError(
            400,
            f"too many messages: {len(request.messages)} (the limit is {limits.max_messages})",
            param="messages",
            code="too_many_messages",
        )
    template = entry.template
    options = _options(template, request)
    wire_choice = request.tool_choice
    try:
        tools = list(request.tools) if request.tools else None
        validated_tools = validate_tools(tools)
        _check_tool_choice(wire_choice, validated_tools)
        rendered = None if wire_choice == "none" else tools
        if rendered and not template.supports_tools:
            raise APIError(
                400,
                f"template {template.name!r} has no tool-call format: tools cannot be offered "
                "(send tool_choice 'none' to render the conversation without them, or serve the "
                f"model with one: --tool-format NAME or tool_format = NAME, NAME one of "
                f"{tool_format_names()})",
                param="tools",
                code="unsupported_value",
            )
        conversation = validate_conversation(request.messages)
    except ChatFmtError as exc:
        raise api_error(exc) from None
    if rendered:
        conversation = Conversation(conversation.messages, validated_tools)
    single = request.parallel_tool_calls is False
    response_format = dict(request.response_format) if request.response_format else None
    return ChatInput(
        entry,
        conversation,
        rendered,
        options,
        wire_choice,
        max_calls=1 if single else None,
        response_format=response_format,
    )


def _options(template: Template, request: ChatRequest) -> dict[str, Any]:
    """The request's template options, checked against the template's."""
    options = dict(request.options)
    try:
        template.check_options(options)
    except ChatFmtError as exc:
        raise APIError(400, str(exc), param="chat_template_kwargs", code="invalid_value") from None
    return options


def _check_tool_choice(choice: WireToolChoice, tools: tuple[Tool, ...]) -> None:
    """A named function must be one of the tools; ``required`` needs some."""
    names = {t.name for t in tools if t.type == "function"}
    if isinstance(choice, dict) and choice["function"]["name"] not in names:
        raise APIError(
            400,
            f"tool_choice names {choice['function']['name']!r}, which is not in tools",
            param="tool_choice",
            code="invalid_value",
        )
    if choice == "required" and not names:
        raise APIError(
            400, "tool_choice 'required' needs tools", param="tool_choice", code="invalid_value"
        )


# ---------------------------------------------------------------------- render
@dataclass(frozen=True)
class Prepared:
    """A checked chat request rendered to the backend's prompt (what ``/v1/render`` shows)."""

    chat: ChatInput
    #: The rendered conversation (generation prompt included, when asked), from the turn
    #: layer: without the reasoning a format refuses to show again, and with its ids and
    #: encoding when a tokenizer is known.
    rendered: Prompt[Conversation]
    prefill: str  # the forced start of the reply (tool_choice), sent after the prompt
    prompt_ids: tuple[int, ...] | None = None  # the rendered ids, then the prefill's
    constraint: Constraint | None = None  # what the backend constrains the reply to

    @property
    def entry(self) -> ModelEntry:
        return self.chat.entry

    @property
    def prompt(self) -> str:
        """The prompt sent to the backend: the rendered conversation and the prefill."""
        return self.rendered.text + self.prefill


def render(chat: ChatInput, *, add_generation_prompt: bool = True) -> Prepared:
    """Render the conversation (and with a tokenizer encode it), then add the prefill."""
    entry = chat.entry
    tokenizer = entry.active_tokenizer
    try:
        rendered = render_prompt(
            entry.template,
            chat.conversation,
            options=chat.options,
            tokenizer=tokenizer,
            add_generation_prompt=add_generation_prompt,
            strict_history=entry.strict_history,
        )
    except ChatFmtError as exc:
        raise api_error(exc) from None
    constraint = _constraint(chat) if add_generation_prompt else None
    if constraint is not None:
        prefill = constraint.prefill
    else:
        prefill = _prefill(chat) if add_generation_prompt else ""
    ids = rendered.ids
    if ids is not None and prefill:
        ids += tuple(tokenizer.encode(prefill))  # template markup: its special tokens are ids
    return Prepared(chat, rendered, prefill, ids, constraint)


def _constraint(chat: ChatInput) -> Constraint | None:
    """The request's constraint (``None``: nothing to constrain, or the template's format
    cannot be compiled: then the prefill and the reply's validation still apply).

    A malformed schema (``tools[i].function.parameters``, ``response_format.json_schema``)
    is a 400 naming it.
    """
    if not chat.checked or not chat.only_functions:
        return None
    try:
        return compile_constraint(
            chat.entry.template,
            tools=chat.tools,
            tool_choice=chat.tool_choice if chat.tool_choice is not None else "auto",
            parallel_tool_calls=chat.max_calls is None,
            response_format=chat.response_format,
            options=chat.options,
        )
    except ValidationError as exc:
        raise api_error(exc) from None
    except ChatFmtError as exc:
        log.warning("no constraint for %s: %s", chat.entry.name, exc)
        return None


def _prefill(chat: ChatInput) -> str:
    """The start of the reply that ``tool_choice`` forces (``""`` for auto and none)."""
    try:
        return prefill_for(chat.entry.template, chat.options, chat.tool_choice)
    except ChatFmtError as exc:
        raise APIError(400, str(exc), param="tool_choice", code="unsupported_value") from None


def prepare(entry: ModelEntry, request: ChatRequest, limits: Limits) -> Prepared:
    """:func:`validate` then :func:`render` (with the request's ``add_generation_prompt``)."""
    chat = validate(entry, request, limits)
    return render(chat, add_generation_prompt=request.add_generation_prompt)


def check_length(prepared: Prepared, limits: Limits) -> None:
    """Refuse a prompt (prefill included) as long as the context, when its ids are known."""
    if prepared.prompt_ids is None:
        return
    limit = limits.max_prompt_tokens or prepared.entry.template.generation_config.session_len
    if len(prepared.prompt_ids) >= limit:
        raise APIError(
            400,
            f"the prompt has {len(prepared.prompt_ids)} tokens; this model's context holds {limit}",
            param="messages",
            code="context_length_exceeded",
        )


async def prompt_tokens(prepared: Prepared) -> int:
    """The prompt's token count before generation (Anthropic's ``input_tokens``,
    ``count_tokens``): the known tokenizer's, else the engine's tokenize endpoint.

    Never a guess: without either, a 400 says how to provide a tokenizer.
    """
    if prepared.prompt_ids is not None:
        return len(prepared.prompt_ids)
    try:
        return len(await prepared.entry.backend.tokenize(prepared.prompt))
    except UnsupportedFeatureError as exc:
        raise APIError(
            400,
            f"cannot count tokens for model {prepared.entry.name!r}: no tokenizer is known "
            f"({exc}); serve it with --tokenizer PATH (or tokenizer = PATH in the config), "
            "or in front of an engine with a tokenize endpoint",
            code="tokenizer_unavailable",
        ) from None
    except ChatFmtError as exc:  # the engine failed
        raise api_error(exc) from None


# ---------------------------------------------------------------------- backend
def completion_request(prepared: Prepared, request: ChatRequest) -> CompletionRequest:
    """The backend request: the template's stop words and sampling defaults, overridden by
    the request's."""
    template = prepared.entry.template
    sampling = request.sampling
    stop = (*template.generation_config.all_stop_words, *sampling.stop)
    try:
        return CompletionRequest.for_template(
            template,
            prepared.prompt,
            prompt_token_ids=prepared.prompt_ids,
            constraint=prepared.constraint,
            stop=stop,
            **sampling.overrides(),
        )
    except ValidationError as exc:
        raise api_error(exc) from None
