"""``n`` replies to one prompt: ``n`` :class:`~.generation.Generation` s run side by side.

Every API that takes ``n`` (chat completions, Responses, plain completions) gets its
choices here: the prompt is rendered once and sent ``n`` times through the model's
:class:`~chatfmt.backends.Backend` (so it works on every backend, the embedded model
included — which generates them one after the other), each reply parsed and checked on
its own. With a fixed ``seed``, choice ``i`` is sampled with ``seed + i`` so that the
choices differ and the request stays reproducible. Usage counts the prompt once and the
completions of all choices.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

from ..backends.base import CompletionRequest, Usage
from ..parsing import Delta
from .chat import Prepared
from .errors import APIError
from .generation import Generation

T = TypeVar("T")

#: The most choices (and, for plain completions, prompts × choices) one request may ask for.
MAX_CHOICES = 128


def requests_for(request: CompletionRequest, n: int) -> list[CompletionRequest]:
    """``n`` backend requests for one prompt (a fixed seed becomes ``seed + i``)."""
    if n == 1 or request.seed is None:
        return [request] * n
    return [request.with_(seed=request.seed + i) for i in range(n)]


async def start_all(
    starts: Sequence[Awaitable[None]], close: Callable[[], Awaitable[None]]
) -> None:
    """Await ``starts`` side by side; if one fails, ``close`` everything and raise its error."""
    results = await asyncio.gather(*starts, return_exceptions=True)
    failed = next((r for r in results if isinstance(r, BaseException)), None)
    if failed is not None:
        await close()
        raise failed


async def interleave(
    streams: Sequence[AsyncIterable[T]],
) -> AsyncIterator[tuple[int, T | None]]:
    """The items of ``streams`` as they come, as ``(index, item)``; ``(index, None)`` once
    stream ``index`` has ended. The first failure is raised (the other streams are stopped);
    leaving early stops them all."""
    if len(streams) == 1:
        async for item in streams[0]:
            yield 0, item
        yield 0, None
        return
    queue: asyncio.Queue[tuple[int, T | None, BaseException | None]] = asyncio.Queue()

    async def pump(index: int, stream: AsyncIterable[T]) -> None:
        try:
            async for item in stream:
                queue.put_nowait((index, item, None))
        except Exception as exc:  # handed to the reader, raised there
            queue.put_nowait((index, None, exc))
            return
        queue.put_nowait((index, None, None))

    tasks = [asyncio.ensure_future(pump(i, s)) for i, s in enumerate(streams)]
    try:
        left = len(tasks)
        while left:
            index, got, error = await queue.get()
            if error is not None:
                raise error
            if got is None:
                left -= 1
            yield index, got
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)


class Choices:
    """The ``n`` generations of one request (see the module's description).

    ``await start()`` starts them all and waits for each one's first chunk (an
    :class:`APIError` — every generation closed — if one fails before that); then iterate
    :meth:`batches`, or ``await run()`` for the whole replies. ``generations[i]`` gives
    choice ``i``'s message, finish reason and :meth:`~.generation.Generation.problem`.
    Always ``await aclose()``.
    """

    def __init__(self, generations: Sequence[Generation]) -> None:
        self.generations = list(generations)

    @classmethod
    def of(cls, prepared: Prepared, request: CompletionRequest, n: int) -> Choices:
        """``n`` generations of ``prepared`` (the backend request made once)."""
        return cls([Generation(prepared, r) for r in requests_for(request, n)])

    def __len__(self) -> int:
        return len(self.generations)

    def where(self, index: int) -> str:
        """How an error names choice ``index`` (nothing with one choice)."""
        return f"choice {index}: " if len(self.generations) > 1 else ""

    async def start(self) -> None:
        """Start every generation (side by side)."""
        gens = self.generations
        if len(gens) == 1:
            await gens[0].start()
            return
        await start_all([g.start() for g in gens], self.aclose)

    def batches(self) -> AsyncIterator[tuple[int, list[Delta] | None]]:
        """``(i, deltas)`` per backend chunk of choice ``i`` as they come, and ``(i, None)``
        when choice ``i`` has ended (its :attr:`~.generation.Generation.finish_reason` and
        :meth:`~.generation.Generation.problem` are then known). A backend failure raises
        :class:`ChatFmtError`."""
        return interleave([g.batches() for g in self.generations])

    async def run(self) -> list[list[Delta]]:
        """Every choice's whole reply (:meth:`.generation.Generation.run`, side by side: an
        :class:`APIError` naming the choice if a backend fails or a reply is invalid)."""

        async def one(index: int, generation: Generation) -> list[Delta]:
            try:
                return await generation.run()
            except APIError as exc:
                exc.message = self.where(index) + exc.message
                raise

        tasks = [asyncio.ensure_future(one(i, g)) for i, g in enumerate(self.generations)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            await self.aclose()

    def problem(self, index: int) -> APIError | None:
        """The error to answer instead of choice ``index``'s (kept) reply, naming it."""
        invalid = self.generations[index].problem()
        if invalid is not None:
            invalid.message = self.where(index) + invalid.message
        return invalid

    async def usage(self) -> Usage | None:
        """The prompt counted once, the completions of every choice summed (``None`` when
        a count is unknown)."""
        usages = [await g.counted_usage() for g in self.generations]
        if any(u is None or u.completion_tokens is None for u in usages):
            return None
        first = usages[0]
        assert first is not None
        return Usage(first.prompt_tokens, sum(u.completion_tokens or 0 for u in usages if u))

    async def aclose(self) -> None:
        """Close every backend stream (idempotent)."""
        for generation in self.generations:
            await generation.aclose()
