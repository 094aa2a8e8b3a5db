"""Lazy grammars on engines that only take strict ones: free text, then the call under the grammar.

A lazy constraint (``tool_choice="auto"``: :attr:`Constraint.trigger` is set) lets the model
write freely until it opens a call, and constrains the call from its opening on. llama.cpp's
server does this itself (``grammar_lazy``); llama-cpp-python (in process and as a server) and
engines reached through a plain grammar field do not. :func:`lazy_stream` emulates it:

1. generate without the constraint, passing text through as it comes, but holding back any
   tail that could be the start of the trigger;
2. when the trigger appears, stop that generation (the text before the trigger has been
   sent), and
3. generate again from ``prompt + text before the trigger`` with the strict form of the
   constraint (its grammar starts with the trigger itself), so the call is written under
   the grammar: one constrained re-generation of the call, never of the free text.

Nothing is generated twice but the trigger's few tokens. The call gets what is left of
``max_tokens`` (the free part counted in streamed pieces, which engines send per token).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable

from .base import CompletionChunk, CompletionRequest, Usage

#: Generates one request (a backend's own, unconstrained-or-strict stream).
Generate = Callable[[CompletionRequest], AsyncIterator[CompletionChunk]]
#: The request that continues ``request`` after ``text`` (prompt and ids extended).
Extend = Callable[[CompletionRequest, str], CompletionRequest]


def extend_text(request: CompletionRequest, text: str) -> CompletionRequest:
    """``request`` continued after ``text``: the prompt text extended, its ids dropped
    (an engine that takes ids gets the text prompt for the continuation)."""
    return request.with_(prompt=request.prompt + text, prompt_token_ids=None)


def _held_back(text: str, trigger: str) -> int:
    """How many characters at the end of ``text`` could begin ``trigger``."""
    for n in range(min(len(text), len(trigger) - 1), 0, -1):
        if trigger.startswith(text[-n:]):
            return n
    return 0


async def lazy_stream(
    generate: Generate, request: CompletionRequest, extend: Extend = extend_text
) -> AsyncIterator[CompletionChunk]:
    """Stream ``request`` (whose constraint is lazy) through ``generate`` as described above."""
    constraint = request.constraint
    assert constraint is not None and constraint.trigger
    trigger = constraint.trigger
    seen = ""
    sent = 0
    pieces = 0
    found = -1
    final: CompletionChunk | None = None
    free = generate(request.with_(constraint=None))
    async with contextlib.aclosing(free):  # type: ignore[type-var]
        async for chunk in free:
            if chunk.finish_reason is not None:
                final = chunk
            if chunk.text:
                pieces += chunk.events
                seen += chunk.text
                found = seen.find(trigger, max(0, sent - len(trigger)))
                if found >= 0:
                    break
                hold = _held_back(seen, trigger)
                if len(seen) - hold > sent:
                    yield CompletionChunk(seen[sent : len(seen) - hold])
                    sent = len(seen) - hold
    if found < 0:  # no call: the free text was the whole reply
        assert final is not None
        yield CompletionChunk(seen[sent:], final.finish_reason, final.usage, final.stop)
        return
    before = seen[:found]
    if len(before) > sent:
        yield CompletionChunk(before[sent:])
    # the call alone, from its opening: no lazy forms left (a tag, an ebnf with free text)
    strict = dataclasses.replace(constraint, trigger=None, structural_tag=None, ebnf=None)
    call = extend(request, before).with_(constraint=strict)
    if request.max_tokens is not None:
        call = call.with_(max_tokens=max(1, request.max_tokens - max(0, pieces - 1)))
    stream = generate(call)
    async with contextlib.aclosing(stream):  # type: ignore[type-var]
        async for chunk in stream:
            if chunk.finish_reason is None:
                yield chunk
                continue
            usage = chunk.usage
            if usage is not None and usage.completion_tokens is not None:
                prompt_tokens = usage.prompt_tokens
                if prompt_tokens is not None:  # the first request's prompt, not the continuation's
                    prompt_tokens -= pieces - 1 if pieces > 1 else 0
                usage = Usage(
                    prompt_tokens,
                    usage.completion_tokens + max(0, pieces - 1),
                    usage.cached_tokens,
                )
            yield CompletionChunk(chunk.text, chunk.finish_reason, usage)
