"""``POST /v1/chat/completions``: OpenAI's chat body → :class:`~.request.ChatRequest`, and a
:class:`~.generation.Generation`'s deltas → ``chat.completion`` (or its chunks as events)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from ..backends.base import Usage
from ..errors import ChatFmtError
from . import wire
from .choices import Choices
from .errors import api_error
from .events import Last
from .generation import Generation
from .request import ChatRequest, Sampling
from .schema import ChatBody, RenderBody, response_format_dict


def chat_request(body: RenderBody) -> ChatRequest:
    """The internal request of a chat-completions (or ``/v1/render``) body."""
    choice = body.tool_choice
    wire_choice = (
        choice.model_dump() if choice is not None and not isinstance(choice, str) else choice
    )
    common: dict[str, Any] = {
        "model": body.model,
        "messages": body.messages,
        "tools": body.tools,
        "tool_choice": wire_choice,
        "options": dict(body.chat_template_kwargs or {}),
        "add_generation_prompt": body.add_generation_prompt,
    }
    if not isinstance(body, ChatBody):
        return ChatRequest(**common)
    stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    sampling = Sampling(
        max_tokens=body.max_completion_tokens or body.max_tokens,
        temperature=body.temperature,
        top_p=body.top_p,
        top_k=body.top_k,
        repetition_penalty=body.repetition_penalty,
        seed=body.seed,
        stop=tuple(stop),
    )
    return ChatRequest(
        **common,
        parallel_tool_calls=body.parallel_tool_calls,
        response_format=response_format_dict(body),
        sampling=sampling,
        n=body.n or 1,
    )


def _usage(usage: Usage | None) -> dict[str, int] | None:
    if usage is None or usage.prompt_tokens is None or usage.completion_tokens is None:
        return None
    return wire.usage(usage.prompt_tokens, usage.completion_tokens)


async def complete(generation: Generation) -> dict[str, Any]:
    """A whole ``chat.completion`` object (an :class:`APIError` if the reply is invalid)."""
    deltas = await generation.run()
    return wire.chat_completion(
        generation.prepared.entry.name,
        generation.message(deltas),
        generation.finish_reason,
        _usage(await generation.counted_usage()),
    )


async def complete_choices(choices: Choices) -> dict[str, Any]:
    """A whole ``chat.completion`` object of ``n`` choices (an :class:`APIError` if a reply
    is invalid, naming its choice)."""
    replies = await choices.run()
    gens = choices.generations
    return wire.chat_completion_n(
        gens[0].prepared.entry.name,
        [(g.message(d), g.finish_reason) for g, d in zip(gens, replies, strict=True)],
        _usage(await choices.usage()),
    )


async def choice_events(choices: Choices, include_usage: bool) -> AsyncGenerator[bytes, None]:
    """The ``chat.completion.chunk`` events of ``n`` started choices, interleaved as the
    backend sends them (each chunk names its choice's ``index``; each choice ends with its
    own finish reason). An invalid reply or a failure ends the stream with one error event."""
    gens = choices.generations
    chunks = wire.ChunkWriter(gens[0].prepared.entry.name)
    max_calls = gens[0].max_calls
    wire_delta = wire.wire_delta
    try:
        for index in range(len(gens)):
            yield chunks.start(index)
        async for index, batch in choices.batches():
            if batch is None:  # choice `index` has ended
                invalid = choices.problem(index)
                if invalid is not None:
                    yield wire.sse(invalid.body())
                    return
                yield chunks.delta({}, gens[index].finish_reason, index)
                continue
            for delta in batch:
                if (out := wire_delta(delta, max_calls)) is not None:
                    yield chunks.delta(out, index=index)
        if include_usage:
            yield chunks.usage(_usage(await choices.usage()))
        yield wire.DONE
    except ChatFmtError as exc:
        yield wire.sse(api_error(exc).body())
    finally:
        await choices.aclose()


async def events(generation: Generation, include_usage: bool) -> AsyncGenerator[bytes, None]:
    """The ``chat.completion.chunk`` events of a started generation, one write per backend
    chunk (the first one with the assistant role's chunk; the last with the finish, the
    usage and ``[DONE]``).

    A failure after the first event is one ``data: {"error": …}`` event, and the stream
    ends; so is an invalid reply, instead of the finish (the client's SDK raises it).
    """
    chunks = wire.ChunkWriter(generation.prepared.entry.name)
    max_calls = generation.max_calls
    wire_delta = wire.wire_delta
    encode = chunks.delta
    out = [chunks.start()]
    try:
        async for batch in generation.batches():  # the hot loop: one pass per backend chunk
            for delta in batch:
                if (sent := wire_delta(delta, max_calls)) is not None:
                    out.append(encode(sent))
            if out:
                yield out[0] if len(out) == 1 else b"".join(out)
                out = []
        invalid = generation.problem()
        if invalid is not None:
            yield Last(b"".join([*out, wire.sse(invalid.body())]))
            return
        out.append(chunks.delta({}, generation.finish_reason))
        if include_usage:
            out.append(chunks.usage(_usage(await generation.counted_usage())))
        out.append(wire.DONE)
        yield Last(b"".join(out))
    except ChatFmtError as exc:
        yield Last(b"".join([*out, wire.sse(api_error(exc).body())]))
    finally:
        await generation.aclose()
