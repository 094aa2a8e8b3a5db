"""Several engines serving one model, behind the one :class:`~.base.Backend` interface.

:class:`PoolBackend` spreads requests over its members so that the gateway and the agent
never know there is more than one engine:

- **least in flight**: a request goes to the healthy member with the fewest requests in
  flight (ties take turns);
- **prefix affinity**: the prompt is cut into blocks of ``block_chars`` characters and each
  block's prefix is hashed (a chain: the hash of block *k* covers blocks 0..*k*). The
  member that served a prompt (and its reply) is remembered for each of those prefixes, in
  a bounded table. A new request goes to the member that served its longest known prefix —
  a follow-up turn of a conversation starts with the whole previous turn, so it goes where
  the engine's prefix cache holds it — unless that member has more than ``affinity_slack``
  requests in flight beyond the least busy one (then load wins);
- **retry before the first byte**: a member that fails before its first chunk (unreachable,
  HTTP 5xx or 429, a broken answer) is left for another member, untried so far; the caller
  sees nothing. After the first chunk a failure is the caller's (nothing can be taken back);
- **ejection and probing**: a member that fails ``max_failures`` times in a row is taken
  out, and probed (:meth:`~.base.Backend.ping`: the engine's ``/models``) after
  ``probe_delay`` seconds, then after twice as long each time it fails, up to
  ``probe_max_delay``; it is back once a probe answers.

When no member is left (all taken out, or all failed this request), the request fails with
:class:`~chatfmt.errors.BackendUnavailableError`, naming each member and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import (
    BackendConnectionError,
    BackendError,
    BackendHTTPError,
    BackendProtocolError,
    BackendUnavailableError,
    ChatFmtError,
)
from .base import Backend, CompletionChunk, CompletionRequest, CompletionResult

log = logging.getLogger("chatfmt.backends.pool")

T = TypeVar("T")


@dataclass(frozen=True)
class PoolPolicy:
    """How a :class:`PoolBackend` spreads, retries and takes members out."""

    #: Consecutive failures after which a member is taken out.
    max_failures: int = 3
    #: Seconds before the first probe of a member taken out; doubled per failed probe.
    probe_delay: float = 1.0
    probe_max_delay: float = 30.0
    #: Seconds a probe may take.
    probe_timeout: float = 5.0
    #: How many more requests in flight than the least busy member the member holding a
    #: request's prefix may have, and still get it.
    affinity_slack: int = 2
    #: The block size (characters) of prompt prefixes.
    block_chars: int = 128
    #: How many prefixes are remembered (the oldest are forgotten).
    max_prefixes: int = 100_000


@dataclass(eq=False)
class Member:
    """One engine of a pool and its state."""

    backend: Backend
    name: str
    in_flight: int = 0
    failures: int = 0  # in a row
    healthy: bool = True
    last_error: str = ""
    probe: asyncio.Task[None] | None = field(default=None, repr=False)


def _retryable(exc: BackendError) -> bool:
    """Whether another engine may succeed where this one failed."""
    if isinstance(exc, BackendHTTPError):
        return exc.status >= 500 or exc.status == 429
    return isinstance(exc, (BackendConnectionError, BackendProtocolError))


def _counts(exc: BackendError) -> bool:
    """Whether the failure speaks against the engine (a 4xx is the request's fault, and
    a 429 says it is busy, not broken)."""
    return not isinstance(exc, BackendHTTPError) or exc.status >= 500


def prefix_hashes(text: str, block: int, seed: int = 0) -> list[int]:
    """The chained hashes of ``text``'s full blocks (``seed``: the hash of what came before
    ``text``): the hash of block *k* covers blocks 0..*k*."""
    out: list[int] = []
    h = seed
    for at in range(0, len(text) - block + 1, block):
        h = hash((h, text[at : at + block]))
        out.append(h)
    return out


class PoolBackend(Backend):
    """One model served by several engines (``backends``, named by ``names`` — default
    their ``base_url``); see the module's description for the policy."""

    def __init__(
        self,
        backends: Sequence[Backend],
        *,
        names: Sequence[str] | None = None,
        policy: PoolPolicy | None = None,
    ) -> None:
        if not backends:
            raise ChatFmtError("a backend pool needs at least one backend")
        if names is None:
            names = [getattr(b, "base_url", f"backend {i}") for i, b in enumerate(backends)]
        if len(names) != len(backends):
            raise ChatFmtError("a backend pool needs one name per backend")
        self.members = [Member(b, n) for b, n in zip(backends, names, strict=True)]
        self.policy = policy or PoolPolicy()
        self._prefixes: OrderedDict[int, Member] = OrderedDict()
        self._turn = itertools.count()

    # ------------------------------------------------------------------ choosing
    def choose(
        self,
        request: CompletionRequest,
        tried: Sequence[Member] = (),
        hashes: Sequence[int] | None = None,
    ) -> Member:
        """The member for ``request`` (not one of ``tried``; ``hashes``: its prompt's
        :func:`prefix_hashes`, if computed already); a :class:`BackendUnavailableError` if
        none is left."""
        candidates = [m for m in self.members if m.healthy and m not in tried]
        if not candidates:
            raise self._unavailable(tried)
        least = min(m.in_flight for m in candidates)
        if hashes is None:
            hashes = self.hashes(request.prompt)
        owner = self._owner(hashes)
        slack = self.policy.affinity_slack
        if owner is not None and owner in candidates and owner.in_flight <= least + slack:
            return owner
        idle = [m for m in candidates if m.in_flight == least]
        return idle[next(self._turn) % len(idle)]

    def hashes(self, text: str) -> list[int]:
        """The prefix hashes of ``text``'s blocks."""
        return prefix_hashes(text, self.policy.block_chars)

    def _owner(self, hashes: Sequence[int]) -> Member | None:
        """The member that served the longest known prefix."""
        table = self._prefixes
        if not table:
            return None
        for h in reversed(hashes):
            member = table.get(h)
            if member is not None:
                return member
        return None

    def remember(self, member: Member, hashes: Sequence[int]) -> None:
        """Note that ``member``'s engine has the prefixes of ``hashes`` cached."""
        table = self._prefixes
        for h in hashes:
            table[h] = member
            table.move_to_end(h)
        while len(table) > self.policy.max_prefixes:
            table.popitem(last=False)

    def _extended(self, hashes: list[int], prompt: str, output: str) -> list[int]:
        """The hashes of ``prompt + output`` past the prompt's own (``hashes``)."""
        done = len(hashes) * self.policy.block_chars
        rest = prompt[done:] + output
        return prefix_hashes(rest, self.policy.block_chars, seed=hashes[-1] if hashes else 0)

    def _unavailable(self, tried: Sequence[Member]) -> BackendUnavailableError:
        parts = []
        for m in self.members:
            why = m.last_error or "no answer"
            state = "failed this request" if m in tried and m.healthy else "taken out"
            parts.append(f"{m.name} ({state}: {why})")
        return BackendUnavailableError(
            f"no backend of {len(self.members)} is available: {'; '.join(parts)}"
        )

    # ------------------------------------------------------------------ health
    def succeeded(self, member: Member) -> None:
        member.failures = 0

    def failed(self, member: Member, exc: BackendError) -> None:
        """Count a failure of ``member``; take it out after ``max_failures`` in a row."""
        member.last_error = str(exc)
        if not _counts(exc):
            return
        member.failures += 1
        if member.healthy and member.failures >= self.policy.max_failures:
            member.healthy = False
            log.warning(
                "backend %s taken out after %d failures: %s", member.name, member.failures, exc
            )
            member.probe = asyncio.get_running_loop().create_task(self._probe(member))

    async def _probe(self, member: Member) -> None:
        """Probe ``member`` until it answers (bounded backoff), then put it back."""
        delay = self.policy.probe_delay
        while True:
            await asyncio.sleep(delay)
            try:
                await asyncio.wait_for(member.backend.ping(), self.policy.probe_timeout)
            except (ChatFmtError, asyncio.TimeoutError) as exc:
                member.last_error = str(exc) or "the probe timed out"
                delay = min(delay * 2, self.policy.probe_max_delay)
                continue
            member.failures = 0
            member.healthy = True
            member.probe = None
            log.warning("backend %s is back", member.name)
            return

    # ------------------------------------------------------------------ Backend
    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        tried: list[Member] = []
        hashes = self.hashes(request.prompt)
        while True:
            member = self.choose(request, tried, hashes)
            tried.append(member)
            self.remember(member, hashes)
            member.in_flight += 1
            started = False
            parts: list[str] = []
            try:
                chunks = member.backend.stream(request)
                async with contextlib.aclosing(chunks):  # type: ignore[type-var]
                    async for chunk in chunks:
                        if not started:
                            started = True
                            self.succeeded(member)
                        parts.append(chunk.text)
                        yield chunk
            except BackendError as exc:
                self.failed(member, exc)
                if started or not _retryable(exc):
                    raise
                log.info("backend %s failed before answering, trying another: %s", member.name, exc)
                continue
            finally:
                member.in_flight -= 1
            self.remember(member, self._extended(hashes, request.prompt, "".join(parts)))
            return

    async def complete(self, request: CompletionRequest) -> CompletionResult:
        result = await self._call(request, lambda b: b.complete(request))
        return result

    async def _call(self, request: CompletionRequest, call: Callable[[Backend], Awaitable[T]]) -> T:
        """``call`` on a member, retried on another while it fails before anything was
        given to the caller."""
        tried: list[Member] = []
        hashes = self.hashes(request.prompt)
        while True:
            member = self.choose(request, tried, hashes)
            tried.append(member)
            member.in_flight += 1
            try:
                result = await call(member.backend)
            except BackendError as exc:
                self.failed(member, exc)
                if not _retryable(exc):
                    raise
                continue
            finally:
                member.in_flight -= 1
            self.succeeded(member)
            if isinstance(result, CompletionResult):
                self.remember(member, hashes + self._extended(hashes, request.prompt, result.text))
            return result

    async def counts_prompt_in_stream(self) -> bool:
        """Whether every healthy member does (a member that is out is not probed)."""
        healthy = [m for m in self.members if m.healthy]
        for member in healthy:
            if not await member.backend.counts_prompt_in_stream():
                return False
        return bool(healthy)

    async def tokenize(self, text: str) -> list[int]:
        return await self._call(CompletionRequest(""), lambda b: b.tokenize(text))

    async def model_id(self) -> str:
        """The model name of the first member that tells it (for finding the template)."""
        errors = []
        for member in self.members:
            lookup: Any = getattr(member.backend, "model_id", None)
            if lookup is None:
                continue
            try:
                return str(await lookup())
            except BackendError as exc:
                errors.append(f"{member.name}: {exc}")
        raise BackendUnavailableError(
            "no backend of the pool tells its model: " + ("; ".join(errors) or "none can")
        )

    async def ping(self) -> None:
        """Fine while one member is."""
        errors: list[str] = []
        for member in self.members:
            try:
                await member.backend.ping()
                return
            except BackendError as exc:
                errors.append(f"{member.name}: {exc}")
        raise BackendUnavailableError("no backend of the pool answers: " + "; ".join(errors))

    async def aclose(self) -> None:
        probes = [m.probe for m in self.members if m.probe is not None]
        for probe in probes:
            probe.cancel()
        for probe in probes:
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await probe
        for member in self.members:
            member.probe = None
            await member.backend.aclose()
