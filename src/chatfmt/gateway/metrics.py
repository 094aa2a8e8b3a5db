"""Prometheus metrics of the gateway, served at ``GET /metrics``.

Per request, whatever the API: requests by endpoint and HTTP status, requests in flight,
end-to-end latency (request received → response's last byte), time to first token
(request received → the backend's first chunk), prompt and completion tokens, and backend
failures. Recording costs a few counter updates per request, none per streamed event.

With ``chatfmt serve --workers N`` the workers share the figures through
prometheus-client's multiprocess mode: ``serve`` sets ``PROMETHEUS_MULTIPROC_DIR`` to a
fresh directory before the workers start, and ``/metrics`` (answered by any worker) sums
every worker's files. See ``docs/gateway.md`` (Metrics).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Latency buckets (seconds): a gateway adds milliseconds, an engine's answer takes seconds.
_TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
#: The endpoint label of a path that is not one of the gateway's routes.
OTHER = "other"
#: Where a request's raw ASGI ``send`` is kept (see :func:`raw_send`).
RAW_SEND = "chatfmt.raw_send"


def multiprocess_dir() -> str | None:
    """The multiprocess directory prometheus-client writes to (``None``: one process)."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get(
        "prometheus_multiproc_dir"  # noqa: SIM112  (prometheus-client reads both spellings)
    )


@dataclass
class RequestTiming:
    """The metrics, endpoint and arrival time of the request being answered."""

    metrics: Metrics
    endpoint: str
    start: float


#: The request being answered (set by :class:`MetricsMiddleware`, read by generations).
current: ContextVar[RequestTiming | None] = ContextVar("chatfmt_request", default=None)


class Metrics:
    """The gateway's metrics, in their own registry (or the multiprocess directory's)."""

    def __init__(self) -> None:
        self.multiprocess = multiprocess_dir() is not None
        self.registry = CollectorRegistry()
        into = None if self.multiprocess else self.registry
        self.requests = Counter(
            "chatfmt_requests",
            "Requests answered, by endpoint and HTTP status.",
            ["endpoint", "status"],
            registry=into,
        )
        self.in_flight = Gauge(
            "chatfmt_requests_in_flight",
            "Requests being answered (streams included), by endpoint.",
            ["endpoint"],
            registry=into,
            multiprocess_mode="livesum",
        )
        self.latency = Histogram(
            "chatfmt_request_duration_seconds",
            "End-to-end time: request received to the response's last byte.",
            ["endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=into,
        )
        self.ttft = Histogram(
            "chatfmt_time_to_first_token_seconds",
            "Request received to the backend's first chunk of output.",
            ["endpoint", "model"],
            buckets=_TTFT_BUCKETS,
            registry=into,
        )
        self.tokens = Counter(
            "chatfmt_tokens",
            "Tokens of prompts (kind=prompt) and replies (kind=completion), by model.",
            ["model", "kind"],
            registry=into,
        )
        self.backend_errors = Counter(
            "chatfmt_backend_errors",
            "Backend failures (unreachable, timed out, HTTP error, broken stream), by model.",
            ["model"],
            registry=into,
        )
        self._children: dict[Any, Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    # ------------------------------------------------------------------ recording
    def first_token(self, endpoint: str, model: str, seconds: float) -> None:
        self._child(self.ttft, endpoint, model).observe(seconds)

    def finished(
        self, model: str, prompt_tokens: int | None, completion_tokens: int | None, failed: bool
    ) -> None:
        """One generation ended: its token counts (where known) and whether the backend failed."""
        if prompt_tokens:
            self._child(self.tokens, model, "prompt").inc(prompt_tokens)
        if completion_tokens:
            self._child(self.tokens, model, "completion").inc(completion_tokens)
        if failed:
            self._child(self.backend_errors, model).inc()

    def backend_failed(self, model: str) -> None:
        self._child(self.backend_errors, model).inc()

    # ------------------------------------------------------------------ exposition
    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format (every worker's, in multiprocess mode)."""
        if not self.multiprocess:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)

    content_type = CONTENT_TYPE_LATEST


def raw_send(scope: Scope) -> Send | None:
    """The server's own ``send`` of this request (no middleware around it), for the body
    of a streamed response once its start was sent the usual way (kept by
    :class:`RawSendApp`)."""
    return scope.get(RAW_SEND)


class RawSendApp(Starlette):
    """A Starlette application that keeps the server's ``send`` in the scope: a streamed
    response writes its events with it, past the middleware stack (each layer wraps
    ``send`` to watch for the response's start, then only passes the body on)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[RAW_SEND] = send
        await super().__call__(scope, receive, send)


class MetricsMiddleware:
    """Counts each HTTP request by endpoint and status, times it, and tracks requests in
    flight. The endpoint is the route's path (``/v1/responses/{response_id}``) for the
    ``routes`` given, else ``other``."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: Iterable[Route]) -> None:
        self.app = app
        self.metrics = metrics
        routes = list(routes)
        self.endpoints = frozenset(r.path for r in routes if "{" not in r.path)
        self._patterns = [(r.path_regex, r.path) for r in routes if "{" in r.path]

    def endpoint(self, path: str) -> str:
        """The endpoint label of a request path."""
        if path in self.endpoints:
            return path
        for regex, name in self._patterns:
            if regex.match(path):
                return name
        return OTHER

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        metrics = self.metrics
        endpoint = self.endpoint(scope["path"])
        start = time.perf_counter()
        token = current.set(RequestTiming(metrics, endpoint, start))
        status = 500  # an application that fails before answering: the server answers 500

        async def send_start(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        in_flight = metrics._child(metrics.in_flight, endpoint)
        in_flight.inc()
        try:
            await self.app(scope, receive, send_start)
        finally:
            in_flight.dec()
            current.reset(token)
            metrics._child(metrics.requests, endpoint, str(status)).inc()
            metrics._child(metrics.latency, endpoint).observe(time.perf_counter() - start)
