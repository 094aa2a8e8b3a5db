"""Chat completions over a raw completions backend: validate → render → backend → parse → wire.

Each step is one function: :func:`validate` checks the request (limits, options, tools,
``tool_choice``, messages) into a :class:`ChatInput`; :func:`render` renders it with the
turn layer (:func:`chatfmt.turn.render_prompt`) and adds the ``tool_choice`` prefill, a
:class:`Prepared` prompt; :func:`completion_request` is the backend request (the
template's stop words plus the request's); :func:`complete` and :func:`start_stream` run
it through the template's :class:`~chatfmt.parsing.StreamParser`
(:class:`chatfmt.turn.ParsedTurn`) and send the deltas in OpenAI's shapes (:mod:`.wire`).

Structure is guaranteed both ways: :func:`render` compiles the request's tools,
``tool_choice``, ``parallel_tool_calls`` and ``response_format`` into one constraint
(:func:`chatfmt.constraints.compile_constraint`) that the backend sends in its engine's
dialect, and every reply is checked (:func:`chatfmt.constraints.check_reply`) before it is
returned: see :func:`reply_error` for what a client gets when it is not valid.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..backends.base import CompletionRequest, Usage
from ..constraints import Constraint, check_reply, compile_constraint
from ..errors import ChatFmtError, ValidationError
from ..protocol import Conversation, Tool, validate_conversation, validate_tools
from ..template import Template
from ..tool_format import tool_format_names
from ..turn import Delta, ParsedTurn, Prompt, render_prompt
from . import wire
from .errors import APIError, api_error
from .models import Limits, ModelEntry
from .schema import ChatBody, RenderBody, response_format_dict
from .tool_choice import prefill_for

log = logging.getLogger("chatfmt.gateway")

#: How much of an invalid reply an error response quotes.
_QUOTED = 400

#: ``tool_choice`` as the client sent it: ``auto``/``none``/``required`` or a named function.
WireToolChoice = str | dict[str, Any] | None


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


def validate(entry: ModelEntry, body: RenderBody, limits: Limits) -> ChatInput:
    """Check messages, tools, ``tool_choice`` and options (400s name the field).

    Messages and tools are validated once, here; the template and the tokenizer take the
    validated conversation as it is.
    """
    if len(body.messages) > limits.max_messages:
        raise APIError(
            400,
            f"too many messages: {len(body.messages)} (the limit is {limits.max_messages})",
            param="messages",
            code="too_many_messages",
        )
    template = entry.template
    options = _options(template, body)
    choice = body.tool_choice
    wire_choice = (
        choice.model_dump() if choice is not None and not isinstance(choice, str) else choice
    )
    try:
        tools = list(body.tools) if body.tools else None
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
        conversation = validate_conversation(body.messages)
    except ChatFmtError as exc:
        raise api_error(exc) from None
    if rendered:
        conversation = Conversation(conversation.messages, validated_tools)
    single = getattr(body, "parallel_tool_calls", None) is False
    response_format = response_format_dict(body) if isinstance(body, ChatBody) else None
    return ChatInput(
        entry,
        conversation,
        rendered,
        options,
        wire_choice,
        max_calls=1 if single else None,
        response_format=response_format,
    )


def _options(template: Template, body: RenderBody) -> dict[str, Any]:
    """The request's template options, checked against the template's."""
    options = dict(body.chat_template_kwargs or {})
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


def prepare(entry: ModelEntry, body: RenderBody, limits: Limits) -> Prepared:
    """:func:`validate` then :func:`render` (with the body's ``add_generation_prompt``)."""
    return render(validate(entry, body, limits), add_generation_prompt=body.add_generation_prompt)


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


# ---------------------------------------------------------------------- backend
def completion_request(prepared: Prepared, body: ChatBody) -> CompletionRequest:
    """The backend request: the template's stop words and sampling defaults, overridden by the body."""
    template = prepared.entry.template
    extra_stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    overrides: dict[str, Any] = {"stop": (*template.generation_config.all_stop_words, *extra_stop)}
    max_tokens = body.max_completion_tokens or body.max_tokens
    if max_tokens is not None:
        overrides["max_tokens"] = max_tokens
    for name in ("temperature", "top_p", "top_k", "repetition_penalty", "seed"):
        value = getattr(body, name)
        if value is not None:
            overrides[name] = value
    try:
        return CompletionRequest.for_template(
            template,
            prepared.prompt,
            prompt_token_ids=prepared.prompt_ids,
            constraint=prepared.constraint,
            **overrides,
        )
    except ValidationError as exc:
        raise api_error(exc) from None


# ---------------------------------------------------------------------- parse → wire
def new_turn(prepared: Prepared, request: CompletionRequest) -> ParsedTurn:
    """The parsed completion of a prepared request (the prefill is parsed first)."""
    chat = prepared.chat
    return ParsedTurn.for_template(
        chat.entry.backend,
        request,
        chat.entry.template,
        tools=chat.tools,
        options=chat.options,
        prefill=prepared.prefill,
    )


def usage_of(turn: ParsedTurn, prepared: Prepared) -> dict[str, int] | None:
    """Usage: the backend's counts, else the tokenizer's, else ``None``."""
    usage = turn.usage or Usage()
    prompt, completion = usage.prompt_tokens, usage.completion_tokens
    tokenizer = prepared.entry.active_tokenizer
    if prompt is None and prepared.prompt_ids is not None:
        prompt = len(prepared.prompt_ids)
    if completion is None and tokenizer is not None:
        output = turn.text[len(prepared.prefill) :]
        completion = len(tokenizer.encode(output)) if output else 0
    if prompt is None or completion is None:
        return None
    return wire.usage(prompt, completion)


async def complete(prepared: Prepared, request: CompletionRequest) -> dict[str, Any]:
    """A whole ``chat.completion`` object."""
    turn = new_turn(prepared, request)
    deltas: list[Delta] = []
    try:
        async for batch in turn.deltas():
            deltas.extend(batch)
    except ChatFmtError as exc:
        raise api_error(exc) from None
    message = wire.wire_message(deltas, prepared.chat.max_calls)
    invalid = reply_error(prepared, turn, message)
    if invalid is not None:
        raise invalid
    return wire.chat_completion(
        prepared.entry.name, message, turn.parser.finish_reason, usage_of(turn, prepared)
    )


def reply_error(prepared: Prepared, turn: ParsedTurn, message: dict[str, Any]) -> APIError | None:
    """The error answered instead of a reply that breaks the request's structure.

    Checked when tools were offered or a ``response_format`` asked for: a call of a tool
    that was not offered, arguments that are not JSON or not valid against the tool's
    schema, ``required``/named answered otherwise, content that is not JSON or does not
    match the schema. Such a reply is never returned as if it were valid: the client gets
    HTTP 500 ``model_error`` (code ``invalid_model_output``, as OpenAI answers when its model
    writes an invalid call) naming each problem and quoting what the model wrote. A reply
    cut by ``max_tokens`` is returned as it is, with ``finish_reason: "length"``.
    """
    chat = prepared.chat
    if not chat.checked or turn.truncated:
        return None
    problems = check_reply(
        message,
        tools=chat.function_tools,
        tool_choice=chat.tool_choice if chat.tool_choice is not None else "auto",
        response_format=chat.response_format,
    )
    if not problems:
        return None
    found = "; ".join(f"{p.where}: {p.what}" if p.where else p.what for p in problems)
    written = turn.text
    quoted = written if len(written) <= _QUOTED else written[:_QUOTED] + "…"
    return APIError(
        500,
        f"the model's reply is not valid ({found}); the model wrote: {quoted!r}",
        type="model_error",
        code="invalid_model_output",
    )


async def start_stream(
    prepared: Prepared, request: CompletionRequest, include_usage: bool
) -> tuple[AsyncGenerator[bytes, None], Callable[[], Awaitable[None]]]:
    """The SSE body of a streamed completion, started (the backend has answered), and the
    function that closes the backend stream (also when the body is never iterated).

    Waiting for the backend's first chunk before the response starts lets a backend that
    is down or refuses be an HTTP error (502/504) rather than an event; a failure after
    that is one ``data: {"error": …}`` event, and the stream ends.
    """
    turn = new_turn(prepared, request)
    batches = turn.deltas()
    early: list[list[Delta]] = []
    sent_before = 1 if prepared.prefill else 0
    try:
        async for batch in batches:
            early.append(batch)
            if len(turn.raw) > sent_before:  # the backend's first chunk is in
                break
    except ChatFmtError as exc:
        await batches.aclose()
        raise api_error(exc) from None
    except BaseException:
        await batches.aclose()
        raise
    return _events(prepared, turn, batches, early, include_usage), batches.aclose


async def _events(
    prepared: Prepared,
    turn: ParsedTurn,
    batches: AsyncGenerator[list[Delta], None],
    early: list[list[Delta]],
    include_usage: bool,
) -> AsyncGenerator[bytes, None]:
    chunks = wire.ChunkWriter(prepared.entry.name)
    max_calls = prepared.chat.max_calls
    wire_delta = wire.wire_delta
    kept: list[Delta] | None = [] if prepared.chat.checked else None  # for the check
    try:
        yield chunks.start()
        for batch in early:
            if kept is not None:
                kept.extend(batch)
            for delta in batch:
                if (out := wire_delta(delta, max_calls)) is not None:
                    yield chunks.delta(out)
        async for batch in batches:  # per delta, inlined: the hot loop of every stream
            if kept is not None:
                kept.extend(batch)
            for delta in batch:
                if (out := wire_delta(delta, max_calls)) is not None:
                    yield chunks.delta(out)
        if kept is not None:
            invalid = reply_error(prepared, turn, wire.wire_message(kept, max_calls))
            if invalid is not None:  # instead of the finish: the client's SDK raises it
                yield wire.sse(invalid.body())
                return
        yield chunks.delta({}, turn.parser.finish_reason)
        if include_usage:
            yield chunks.usage(usage_of(turn, prepared))
        yield wire.DONE
    except ChatFmtError as exc:
        yield wire.sse(api_error(exc).body())
    finally:
        await batches.aclose()
