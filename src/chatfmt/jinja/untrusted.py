"""Templates from strangers: rendered in worker processes with time, memory and output limits.

A chat template pasted into the playground or sent with a request is code. The Jinja
sandbox already blocks Python internals; this module bounds what is left — a loop that
never ends, ``range(10**9)``-style work, a gigabyte of output — by rendering in a separate
process: a render that runs past ``seconds`` is stopped (the worker is killed if it does
not stop by itself), the worker's address space is capped at ``memory_mb``, and output
longer than ``max_output`` characters is refused. Each case is a
:class:`~chatfmt.errors.TemplateRenderError` saying which limit was hit; the calling
process (a server) keeps serving other requests, since nothing runs in it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ChatFmtError, TemplateRenderError
from ..requests import RenderRequest

#: Extra seconds the parent waits before killing a worker that ignored its own timer.
_GRACE = 1.0
#: Seconds a new worker may take to start (import chatfmt).
_STARTUP = 60.0


@dataclass(frozen=True)
class SandboxLimits:
    """Limits for one render of an untrusted template."""

    #: Wall-clock seconds per render.
    seconds: float = 2.0
    #: Characters of rendered output.
    max_output: int = 1_000_000
    #: Address space of a worker process, in MiB.
    memory_mb: int = 2048


class _Timeout(BaseException):
    """Raised inside the worker by its interval timer."""


# ------------------------------------------------------------------------- worker side
def _rendered(
    kind: str,
    source: str,
    messages: Any,
    variables: Mapping[str, Any],
    request: RenderRequest,
    max_output: int,
) -> Any:
    """The segments (``kind="segments"``) or the text of a render of ``source``."""
    from .template import JinjaTemplate

    tpl = JinjaTemplate(source, variables=variables, origin="template from a request")
    render = tpl.segments if kind == "segments" else tpl.render
    out = render(messages, request=request)
    size = len(out) if isinstance(out, str) else sum(len(s.text) for s in out)
    _check_size(size, max_output)
    return out


def _segments_task(**kwargs: Any) -> Any:
    return _rendered("segments", **kwargs)


def _render_task(**kwargs: Any) -> Any:
    return _rendered("render", **kwargs)


def _parse_task(
    source: str,
    variables: Mapping[str, Any],
    output: str,
    tools: Any,
    options: Mapping[str, Any],
    truncated: bool,
    parser: str | None,
    max_output: int,
) -> Any:
    """Parse ``output`` with the parser of a template source: a recognized or shipped template's
    own parser, else one derived from the source (recognition and derivation render probes)."""
    from ..parsing import parse
    from .loaders import JinjaSource, from_source

    del max_output  # parsing writes no template output
    tpl = from_source(JinjaSource(source, dict(variables), "template from a request"))
    return message_view(
        parse(output, tpl, tools=tools, truncated=truncated, parser=parser, **options)
    )


def message_view(msg: Any) -> dict[str, Any]:
    """A parsed message as plain data: the message, its finish reason and trailing text."""
    return {
        "message": dict(msg),
        "finish_reason": msg.finish_reason,
        "trailing_text": msg.trailing_text,
    }


def _check_size(size: int, limit: int) -> None:
    if size > limit:
        raise TemplateRenderError(
            f"the template's output has {size:,} characters, over the limit of {limit:,} "
            "for templates from requests"
        )


#: What a worker may be asked to do (name → function of keyword arguments + ``max_output``).
TASKS: dict[str, Callable[..., Any]] = {
    "segments": _segments_task,
    "render": _render_task,
    "parse": _parse_task,
}


def _worker(conn: multiprocessing.connection.Connection, limits: SandboxLimits) -> None:
    import resource
    import signal

    cap = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def alarm(_signum: int, _frame: Any) -> None:
        raise _Timeout

    signal.signal(signal.SIGALRM, alarm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    from . import environment, template  # noqa: F401  (imported before the first render is timed)

    environment.output_limit = limits.max_output

    conn.send(("ready",))
    while True:
        try:
            task, kwargs = conn.recv()
        except EOFError:
            return
        reply: tuple[Any, ...]
        try:
            signal.setitimer(signal.ITIMER_REAL, limits.seconds)
            try:
                reply = ("ok", TASKS[task](**kwargs, max_output=limits.max_output))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Timeout:
            reply = ("timeout",)
        except MemoryError:
            reply = ("memory",)
        except ChatFmtError as exc:
            reply = ("error", exc)
        except Exception as exc:  # anything else a template does is its own failure
            reply = ("error", TemplateRenderError(f"{type(exc).__name__}: {exc}"))
        try:
            conn.send(reply)
        except MemoryError:
            conn.send(("memory",))
        except Exception as exc:  # a result or error that does not pickle
            conn.send(("error", TemplateRenderError(f"{type(exc).__name__}: {exc}")))


# ------------------------------------------------------------------------- parent side
class _Worker:
    def __init__(self, limits: SandboxLimits) -> None:
        self.limits = limits
        self.lock = threading.Lock()
        self.proc: Any = None
        self.conn: multiprocessing.connection.Connection | None = None

    def start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, self.limits), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        if not parent.poll(_STARTUP) or parent.recv() != ("ready",):
            self.stop()
            raise ChatFmtError("the template sandbox's worker process did not start")

    def stop(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
            self.proc = None

    def call(self, task: str, kwargs: dict[str, Any]) -> tuple[Any, ...]:
        if self.proc is None or not self.proc.is_alive():
            self.stop()
            self.start()
        assert self.conn is not None
        self.conn.send((task, kwargs))
        # The worker's own timer answers after ``seconds``; spawning may add a little.
        if not self.conn.poll(self.limits.seconds + _GRACE):
            self.stop()
            return ("timeout",)
        try:
            return tuple(self.conn.recv())
        except (EOFError, OSError):  # the worker died (e.g. killed by the OS for memory)
            self.stop()
            return ("memory",)


class TemplateSandbox:
    """Renders untrusted Jinja chat templates in ``workers`` processes (see module doc).

    Thread-safe; each render takes a free worker (or waits for one). Workers start on
    first use and are restarted after a render that had to be killed. ``close()`` stops them.
    """

    def __init__(self, limits: SandboxLimits | None = None, *, workers: int = 2) -> None:
        if workers < 1:
            raise ChatFmtError("a template sandbox needs at least one worker")
        self.limits = limits or SandboxLimits()
        self._workers = [_Worker(self.limits) for _ in range(workers)]
        self._free = threading.Semaphore(workers)

    def start(self) -> None:
        """Start every worker now (they otherwise start on first use)."""
        for worker in self._workers:
            with worker.lock:
                if worker.proc is None:
                    worker.start()

    def run(self, task: str, **kwargs: Any) -> Any:
        """Run a task (``"segments"``, ``"render"``, ``"parse"``) in a worker; raises its error."""
        if task not in TASKS:
            raise ChatFmtError(f"unknown sandbox task {task!r} (known: {', '.join(TASKS)})")
        with self._free:
            worker = next(w for w in self._workers if w.lock.acquire(blocking=False))
            try:
                reply = worker.call(task, kwargs)
            finally:
                worker.lock.release()
        return self._result(reply)

    def _result(self, reply: tuple[Any, ...]) -> Any:
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "timeout":
            raise TemplateRenderError(
                f"the template did not finish within {self.limits.seconds:g} s "
                "(the limit for templates from requests)"
            )
        if kind == "memory":
            raise TemplateRenderError(
                f"the template needed more than {self.limits.memory_mb} MiB of memory "
                "(the limit for templates from requests)"
            )
        error = reply[1]
        if not isinstance(error, ChatFmtError):
            error = TemplateRenderError(str(error))
        raise error

    def segments(
        self,
        source: str,
        messages: Any,
        *,
        variables: Mapping[str, Any] | None = None,
        request: RenderRequest | None = None,
        **kwargs: Any,
    ) -> list[Any]:
        """The segments of ``messages`` rendered by the Jinja ``source`` (as :func:`chatfmt.render_segments`:
        ``request=`` or its fields as keywords; any other keyword is a template variable)."""
        return list(self._render("segments", source, messages, variables, request, kwargs))

    def render(
        self,
        source: str,
        messages: Any,
        *,
        variables: Mapping[str, Any] | None = None,
        request: RenderRequest | None = None,
        **kwargs: Any,
    ) -> str:
        """The prompt text of ``messages`` rendered by the Jinja ``source`` (arguments as :meth:`segments`)."""
        return str(self._render("render", source, messages, variables, request, kwargs))

    def _render(
        self,
        task: str,
        source: str,
        messages: Any,
        variables: Mapping[str, Any] | None,
        request: RenderRequest | None,
        kwargs: Mapping[str, Any],
    ) -> Any:
        return self.run(
            task,
            source=source,
            messages=messages,
            variables=dict(variables or {}),
            request=RenderRequest.from_kwargs(kwargs, request),
        )

    async def arender(self, source: str, messages: Any, **kwargs: Any) -> str:
        """:meth:`render` without blocking the event loop."""
        return await asyncio.to_thread(self.render, source, messages, **kwargs)

    async def asegments(self, source: str, messages: Any, **kwargs: Any) -> list[Any]:
        """:meth:`segments` without blocking the event loop."""
        return await asyncio.to_thread(self.segments, source, messages, **kwargs)

    def close(self) -> None:
        """Stop the worker processes."""
        for worker in self._workers:
            with worker.lock:
                worker.stop()

    def __enter__(self) -> TemplateSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
