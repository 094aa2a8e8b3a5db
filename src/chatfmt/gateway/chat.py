"""Chat completions over a raw completions backend: render → complete → stream-parse.

The same pieces as the agent (:mod:`chatfmt.agent.turn`): the template renders the
conversation, the backend completes it with the template's stop words (plus the
request's), the template's :class:`~chatfmt.parsing.StreamParser` turns the output into
OpenAI deltas.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..agent.turn import ParsedTurn, prompt_for
from ..backends.base import CompletionRequest, Usage
from ..errors import ChatFmtError, UnsupportedFeatureError, ValidationError
from ..parsing import Delta, StreamParser, merge_deltas
from ..parsing.openai_wire import delta_dict, message_dict
from ..protocol import Conversation, validate_conversation, validate_tools
from .errors import APIError, api_error
from .models import Limits, ModelEntry
from .schema import ChatBody, RenderBody
from .tool_choice import prefill_for


@dataclass
class Prepared:
    """A chat request turned into a completion request (what ``/v1/render`` shows)."""

    entry: ModelEntry
    prompt: str  # the rendered conversation, generation prompt included
    prefill: str  # the forced start of the reply (tool_choice), sent after the prompt
    tools: list[Any] | None  # tools the parser knows (None when not rendered)
    options: dict[str, Any]
    prompt_ids: tuple[int, ...] | None = None
    max_calls: int | None = None  # 1 for parallel_tool_calls: false
    #: What was rendered: the validated conversation (with its tools), or the messages
    #: without the reasoning a format refuses to show again.
    history: Conversation | list[dict[str, Any]] = field(default_factory=list)
    encoding: Any = None  # the prompt's Encoding, when a tokenizer made the ids


def prepare(entry: ModelEntry, body: RenderBody, limits: Limits) -> Prepared:
    """Validate messages, tools and options, and render the prompt (400s name the field)."""
    if len(body.messages) > limits.max_messages:
        raise APIError(
            400,
            f"too many messages: {len(body.messages)} (the limit is {limits.max_messages})",
            param="messages",
            code="too_many_messages",
        )
    template = entry.template
    options = dict(body.chat_template_kwargs or {})
    try:
        template.check_options(options)
    except ChatFmtError as exc:
        raise APIError(400, str(exc), param="chat_template_kwargs", code="invalid_value") from None
    choice = body.tool_choice
    wire_choice = (
        choice.model_dump() if choice is not None and not isinstance(choice, str) else choice
    )
    try:
        tools = list(body.tools) if body.tools else None
        validated_tools = validate_tools(tools)
        names = {t.name for t in validated_tools if t.type == "function"}
        if isinstance(wire_choice, dict) and wire_choice["function"]["name"] not in names:
            raise APIError(
                400,
                f"tool_choice names {wire_choice['function']['name']!r}, which is not in tools",
                param="tool_choice",
                code="invalid_value",
            )
        if wire_choice == "required" and not names:
            raise APIError(
                400, "tool_choice 'required' needs tools", param="tool_choice", code="invalid_value"
            )
        rendered_tools = None if wire_choice == "none" else tools
        if rendered_tools and not template.supports_tools:
            raise APIError(
                400,
                f"template {template.name!r} has no tool-call format: tools cannot be offered "
                "(send tool_choice 'none' to render the conversation without them)",
                param="tools",
                code="unsupported_value",
            )
        # Validated once, here (errors name messages[i].field); the template and the
        # tokenizer take the validated conversation as it is.
        history: Conversation | list[dict[str, Any]] = validate_conversation(
            body.messages, rendered_tools
        )
        tokenizer = entry.active_tokenizer
        generation = body.add_generation_prompt
        encoding = None
        try:
            if tokenizer is None:
                prompt = template.render(history, add_generation_prompt=generation, **options)
                ids = None
            else:  # the text and the ids from one encoding
                from ..tokens import encode

                encoding = encode(
                    history, template, tokenizer, add_generation_prompt=generation, **options
                )
                prompt, ids = encoding.text, tuple(encoding.input_ids)
        except UnsupportedFeatureError as exc:
            if exc.field != "reasoning_content" or not generation:
                raise
            # A format that never shows old reasoning again: rendered without it.
            history = [dict(m) for m in body.messages]
            prompt, ids = prompt_for(template, history, rendered_tools, options, tokenizer)
    except APIError:
        raise
    except ChatFmtError as exc:
        raise api_error(exc) from None
    try:
        prefill = prefill_for(template, options, wire_choice) if generation else ""
    except ChatFmtError as exc:
        raise APIError(400, str(exc), param="tool_choice", code="unsupported_value") from None
    if ids is not None and prefill:
        ids += tuple(tokenizer.encode(prefill))  # template markup: its special tokens are ids
    single = getattr(body, "parallel_tool_calls", None) is False
    return Prepared(
        entry,
        prompt,
        prefill,
        rendered_tools,
        options,
        prompt_ids=ids,
        max_calls=1 if single else None,
        history=history,
        encoding=encoding,
    )


def encoding_of(prepared: Prepared, *, add_generation_prompt: bool = True) -> Any:
    """The prompt's :class:`~chatfmt.tokens.Encoding` (without the prefill)."""
    if prepared.encoding is not None:
        return prepared.encoding
    from ..tokens import encode

    try:
        return encode(
            prepared.history,
            prepared.entry.template,
            prepared.entry.active_tokenizer,
            tools=None if isinstance(prepared.history, Conversation) else prepared.tools,
            add_generation_prompt=add_generation_prompt,
            **prepared.options,
        )
    except ChatFmtError as exc:
        raise api_error(exc) from None


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
            prepared.prompt + prepared.prefill,
            prompt_token_ids=prepared.prompt_ids,
            **overrides,
        )
    except ValidationError as exc:
        raise api_error(exc) from None


def new_turn(prepared: Prepared, request: CompletionRequest) -> ParsedTurn:
    """The parsed completion of a prepared request."""
    parser = StreamParser(prepared.entry.template, tools=prepared.tools, **prepared.options)
    return ParsedTurn(prepared.entry.backend, request, parser, prefill=prepared.prefill)


# ---------------------------------------------------------------------- the wire
def completion_id() -> str:
    return "chatcmpl-" + secrets.token_hex(12)


def wire_delta(delta: Delta, max_calls: int | None = None) -> dict[str, Any] | None:
    """A parser delta as sent to clients (``None`` if nothing is left of it).

    chatfmt's ``error`` flags are removed: an invalid call (arguments that are not a JSON
    object, a call cut off) is sent as the model wrote it, and clients validate arguments,
    as with any OpenAI model. Calls from index ``max_calls`` on are dropped
    (``parallel_tool_calls: false``).
    """
    return delta_dict(delta, errors=False, max_calls=max_calls)


def wire_message(deltas: list[Delta], max_calls: int | None = None) -> dict[str, Any]:
    """The assistant message of a whole reply, as sent to clients (see :func:`wire_delta`)."""
    return message_dict(merge_deltas(deltas), errors=False, max_calls=max_calls)


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
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


async def complete(prepared: Prepared, request: CompletionRequest) -> dict[str, Any]:
    """A whole ``chat.completion`` object."""
    turn = new_turn(prepared, request)
    deltas: list[Delta] = []
    try:
        async for batch in turn.deltas():
            deltas.extend(batch)
    except ChatFmtError as exc:
        raise api_error(exc) from None
    response: dict[str, Any] = {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": prepared.entry.name,
        "choices": [
            {
                "index": 0,
                "message": wire_message(deltas, prepared.max_calls),
                "finish_reason": turn.parser.finish_reason,
                "logprobs": None,
            }
        ],
    }
    usage = usage_of(turn, prepared)
    if usage is not None:
        response["usage"] = usage
    return response


def sse(data: Any) -> bytes:
    """One server-sent event."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()


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
    head = {
        "id": completion_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": prepared.entry.name,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse({**head, "choices": [choice]})

    try:
        yield chunk({"role": "assistant", "content": ""})
        for batch in early:
            for delta in batch:
                if (out := wire_delta(delta, prepared.max_calls)) is not None:
                    yield chunk(out)
        async for batch in batches:
            for delta in batch:
                if (out := wire_delta(delta, prepared.max_calls)) is not None:
                    yield chunk(out)
        yield chunk({}, turn.parser.finish_reason)
        if include_usage:
            yield sse({**head, "choices": [], "usage": usage_of(turn, prepared)})
        yield sse("[DONE]")
    except ChatFmtError as exc:
        yield sse(api_error(exc).body())
    finally:
        await batches.aclose()
