"""One reply generated for a prepared request: backend stream → typed parser deltas → checked.

Every chat API (:mod:`.openai_chat`, :mod:`.responses`, :mod:`.anthropic`) runs a
:class:`Generation` and writes its deltas (:mod:`chatfmt.parsing` ``ContentDelta``,
``ReasoningDelta``, ``ToolCallDelta``) in its own wire shapes; starting the stream, usage,
the finish reason and the reply's validation are the same for all of them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncGenerator
from typing import Any

from ..backends.base import Backend, CompletionRequest, Usage
from ..constraints import check_reply
from ..errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendTimeoutError,
    ChatFmtError,
)
from ..parsing import Delta, merge_deltas
from ..parsing.openai_wire import message_dict
from ..turn import ParsedTurn
from . import metrics
from .chat import Prepared, prompt_tokens
from .errors import APIError, api_error

log = logging.getLogger("chatfmt.gateway")

#: How much of an invalid reply an error response quotes.
_QUOTED = 400
#: The backends that have counted a prompt (see :meth:`Generation.start_counted`).
_COUNTING: weakref.WeakSet[Backend] = weakref.WeakSet()


class Generation:
    """The parsed reply to one :class:`~.chat.Prepared` request from its model's backend.

    ``await start()`` sends the request and waits for the backend's first chunk, so that a
    backend that is down or refuses is an :class:`APIError` (502/504) before any response
    is sent; then iterate :meth:`batches` (lists of deltas, per backend chunk) — or
    ``await run()`` for the whole reply. Afterwards :meth:`problem` says whether the reply
    breaks the request's structure, and :attr:`finish_reason` / :meth:`usage` how it ended.
    Always ``await aclose()`` (closes the backend stream; iterating to the end does too);
    it records the request's metrics (:mod:`.metrics`) when it is answered by a gateway.
    """

    def __init__(self, prepared: Prepared, request: CompletionRequest) -> None:
        self.prepared = prepared
        self.request = request
        self.max_calls = prepared.chat.max_calls
        #: The prompt's token count where it is known before the backend's (counted by the
        #: engine's tokenize endpoint for an API that needs it first: see :meth:`start_counted`).
        self.prompt_count: int | None = (
            len(prepared.prompt_ids) if prepared.prompt_ids is not None else None
        )
        self._begin()

    def _begin(self) -> None:
        """A new turn: the backend request not sent yet, nothing parsed."""
        chat = self.prepared.chat
        self.turn = ParsedTurn.for_template(
            chat.entry.backend,
            self.request,
            chat.entry.template,
            tools=chat.tools,
            options=chat.options,
            prefill=self.prepared.prefill,
        )
        #: Every delta so far, kept when the reply is checked at the end (else ``None``).
        self.kept: list[Delta] | None = [] if chat.checked else None
        self.turn.kept = self.kept
        self._deltas: AsyncGenerator[list[Delta], None] | None = None
        self._usage: Usage | None = None
        self._usage_known = False  # whether _usage holds the ended reply's counts
        self._timing = metrics.current.get()
        self._closed = False

    async def start(self) -> None:
        """Send the request; return once the backend's first chunk is in (an
        :class:`APIError` if the backend fails before that)."""
        try:
            await self.turn.open()
        except ChatFmtError as exc:
            await self.aclose()
            raise api_error(exc) from None
        except BaseException:
            await self.aclose()
            raise
        timing = self._timing
        if timing is not None:
            timing.metrics.first_token(
                timing.endpoint, self.prepared.entry.name, time.perf_counter() - timing.start
            )

    async def start_counted(self) -> int:
        """:meth:`start`, and the prompt's token count (the known tokenizer's, else the
        engine's tokenize endpoint: see :func:`~.chat.prompt_tokens`) for an API whose first
        event carries it.

        The engine counts while the request is sent and its first chunk awaited, instead of
        before; a model that cannot count (no tokenizer, no tokenize endpoint known) is
        refused before generation. Once a backend has counted a prompt, the completion
        request is sent first and the count beside it (the engine's first token is then not
        behind the count). The count is kept (:attr:`prompt_count`): the usage at the end
        does not ask for it again.
        """
        if self.prompt_count is not None:
            await self.start()
            return self.prompt_count
        backend = self.prepared.entry.backend
        if await backend.counts_prompt_in_stream():
            return await self._start_counted_in_stream()
        counting = asyncio.ensure_future(prompt_tokens(self.prepared))
        if backend not in _COUNTING:
            # the count's first step: a model that cannot count says so before generation
            await asyncio.sleep(0)
            if counting.done() and counting.exception() is not None:
                await self.aclose()
                raise counting.exception()  # type: ignore[misc]
        try:
            await self.start()
        except BaseException:
            counting.cancel()
            await asyncio.wait((counting,))
            if not counting.cancelled():
                counting.exception()  # retrieved: the start's failure is the one answered
            raise
        try:
            self.prompt_count = await counting
        except BaseException:
            await self.aclose()
            raise
        _COUNTING.add(backend)
        return self.prompt_count

    async def _start_counted_in_stream(self) -> int:
        """:meth:`start_counted` where the engine sends the prompt's count with the first
        chunk when asked (vLLM's and SGLang's continuous usage): no request of its own.
        An engine that did not send it is asked its tokenize endpoint after all."""
        self.request = self.turn.request = self.request.with_(prompt_count_first=True)
        await self.start()
        usage = self.turn.usage
        if usage is not None and usage.prompt_tokens is not None:
            self.prompt_count = usage.prompt_tokens
            return self.prompt_count
        try:
            self.prompt_count = await prompt_tokens(self.prepared)
        except BaseException:
            await self.aclose()
            raise
        return self.prompt_count

    def batches(self) -> AsyncGenerator[list[Delta], None]:
        """The deltas, per backend chunk (the one read by :meth:`start` first), then the
        parser's closing ones. A backend failure midway raises :class:`ChatFmtError`.

        The turn's own generator: no step of its own between the backend and the API's
        writer (this is the hot loop of a stream)."""
        if self._deltas is None:
            self._deltas = self.turn.deltas()
        return self._deltas

    async def run(self) -> list[Delta]:
        """The whole reply's deltas (:meth:`start` and :meth:`batches`); backend errors
        are :class:`APIError` s, and so is an invalid reply (see :func:`reply_error`).

        Nothing has been answered yet, so a reply that breaks off midway (the engine died
        or dropped the connection) is generated once more from the start — by another
        engine of a pool — before it is an error.
        """
        await self.start()
        deltas: list[Delta] = []
        try:
            for retry in (True, False):
                try:
                    async for batch in self.batches():
                        deltas.extend(batch)
                    break
                except (BackendConnectionError, BackendProtocolError) as exc:
                    if not retry or isinstance(exc, BackendTimeoutError):
                        raise
                    log.info("the backend broke off a whole reply, generating it again: %s", exc)
                    await self.aclose()
                    self._begin()
                    deltas = []
                    await self.start()
        except ChatFmtError as exc:
            raise api_error(exc) from None
        finally:
            await self.aclose()
        invalid = self.problem(deltas)
        if invalid is not None:
            raise invalid
        return deltas

    def problem(self, deltas: list[Delta] | None = None) -> APIError | None:
        """The error to answer instead of this reply, if it breaks the request's structure
        (``deltas``: the whole reply, default the kept ones)."""
        if self.kept is None:
            return None
        message = self.message(self.kept if deltas is None else deltas)
        return reply_error(self.prepared, self.turn, message)

    def message(self, deltas: list[Delta]) -> dict[str, Any]:
        """The reply's assistant message in chat form (chatfmt's ``error`` flags removed;
        calls beyond ``parallel_tool_calls: false``'s one dropped)."""
        return message_dict(merge_deltas(deltas), errors=False, max_calls=self.max_calls)

    async def aclose(self) -> None:
        """Close the backend stream (idempotent); the first call records the metrics."""
        if self._deltas is not None:
            await self._deltas.aclose()
        await self.turn.aclose()
        if not self._closed:
            self._closed = True
            timing = self._timing
            if timing is not None:
                self._record(timing.metrics)

    def _record(self, recorder: metrics.Metrics) -> None:
        """The metrics of the ended generation. Token counts: the ones the API computed, else
        the backend's, else the prompt's ids (the reply is never tokenized just for them)."""
        turn = self.turn
        failed = isinstance(turn.error, BackendError)
        usage = (self._usage if self._usage_known else None) or turn.usage
        prompt = usage.prompt_tokens if usage is not None else None
        if prompt is None:
            prompt = self.prompt_count
        completion = usage.completion_tokens if usage is not None else None
        recorder.finished(self.prepared.entry.name, prompt, completion, failed)

    @property
    def finish_reason(self) -> str | None:
        """``stop``, ``length`` or ``tool_calls`` (once the reply has ended)."""
        return self.turn.parser.finish_reason

    @property
    def text(self) -> str:
        """What the model wrote so far (the prefill included)."""
        return self.turn.text

    def usage(self) -> Usage | None:
        """Token counts: the backend's, else the tokenizer's, else ``None`` (computed once
        the reply has ended)."""
        if self._usage_known:
            return self._usage
        usage = self._count()
        if self.finish_reason is not None:
            self._usage, self._usage_known = usage, True
        return usage

    async def counted_usage(self) -> Usage | None:
        """:meth:`usage`, where neither the backend nor a tokenizer counted completed by
        the engine's tokenize endpoint (llama-cpp-python's server streams no usage);
        ``None`` only when nothing can count."""
        usage = self.usage()
        if usage is not None or self.finish_reason is None:
            return usage
        known = self.turn.usage or Usage()
        prompt, completion = known.prompt_tokens, known.completion_tokens
        if prompt is None:
            prompt = self.prompt_count
        backend = self.prepared.entry.backend
        try:
            if prompt is None:
                prompt = len(await backend.tokenize(self.prepared.prompt))
            if completion is None:
                completion = self._at_most_max(len(await backend.tokenize(self.output)))
        except ChatFmtError:  # no tokenize endpoint, or the engine failed: unknown
            return None
        self._usage, self._usage_known = Usage(prompt, completion), True
        return self._usage

    @property
    def output(self) -> str:
        """What the model wrote (the prefill left out)."""
        return self.turn.text[len(self.prepared.prefill) :]

    def _at_most_max(self, completion: int) -> int:
        """A completion counted by re-tokenizing the text, at most ``max_tokens`` (the
        engine's ids may merge differently than a fresh encoding)."""
        limit = self.request.max_tokens
        return min(completion, limit) if limit is not None else completion

    def _count(self) -> Usage | None:
        turn, prepared = self.turn, self.prepared
        usage = turn.usage or Usage()
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        tokenizer = prepared.entry.active_tokenizer
        if prompt is None:
            prompt = self.prompt_count
        if completion is None and tokenizer is not None:
            output = self.output
            completion = self._at_most_max(len(tokenizer.encode(output))) if output else 0
        if prompt is None or completion is None:
            return None
        return Usage(prompt, completion)


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
