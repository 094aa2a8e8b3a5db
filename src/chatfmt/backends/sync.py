"""Blocking use of an async backend: one event loop in a background thread, owned by the wrapper."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar

from .base import Backend, CompletionChunk, CompletionRequest, CompletionResult

T = TypeVar("T")
_END = object()


def iterate_on(loop: asyncio.AbstractEventLoop, items: AsyncIterator[T]) -> Iterator[T]:
    """The items of an async iterator consumed on ``loop`` (running in another thread), here.

    An exception raised there is raised here; leaving early cancels the consumption.
    """
    passed: queue.Queue[Any] = queue.Queue()

    async def pump() -> None:
        try:
            async for item in items:
                passed.put(item)
        except BaseException as exc:  # handed to the consumer, re-raised there
            passed.put(exc)
        finally:
            passed.put(_END)

    future = asyncio.run_coroutine_threadsafe(pump(), loop)
    try:
        while True:
            item = passed.get()
            if item is _END:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        if not future.done():
            future.cancel()
            concurrent.futures.wait([future], timeout=10)


@contextmanager
def loop_thread() -> Iterator[asyncio.AbstractEventLoop]:
    """A new event loop running in a daemon thread, stopped and closed on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="chatfmt-loop", daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


class SyncBackend:
    """Call a :class:`Backend` from ordinary (non-async) code.

    The backend runs on a private event loop in a daemon thread, so its connection
    pool lives as long as the wrapper. Thread-safe: several threads may call at once.
    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._stack = ExitStack()
        self._loop = self._stack.enter_context(loop_thread())

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coro.close()
            raise RuntimeError("SyncBackend is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def complete(self, request: CompletionRequest) -> CompletionResult:
        """Generate and return the whole text (blocking)."""
        return self._run(self.backend.complete(request))

    def stream(self, request: CompletionRequest) -> Iterator[CompletionChunk]:
        """Generate, yielding chunks as they arrive (blocking iterator).

        Leaving the loop early (``break``) stops the generation.
        """
        return iterate_on(self._loop, self.backend.stream(request))

    def close(self) -> None:
        """Close the backend and stop the loop thread."""
        if self._loop.is_closed():
            return
        self._run(self.backend.aclose())
        self._stack.close()

    def __enter__(self) -> SyncBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
