"""The Starlette application: routes, API key, body limit, OpenAI-shaped errors."""

from __future__ import annotations

import contextlib
import json
import logging
import mimetypes
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import ChatFmtError
from .chat import (
    check_length,
    complete,
    completion_request,
    encoding_of,
    prepare,
    start_stream,
)
from .errors import APIError
from .models import Limits, ModelEntry
from .playground import (
    ParseBody,
    Playground,
    PlaygroundRenderBody,
    page,
    parse_output,
    segments_view,
    static_file,
    template_list,
    tokens_view,
)
from .playground import render as playground_render
from .schema import ChatBody, RenderBody, parse_body, unsupported

log = logging.getLogger("chatfmt.gateway")

Handler = Callable[[Request], Awaitable[Response]]


class EventStream(StreamingResponse):
    """An SSE response that stops (and closes its generator, and so the backend request)
    as soon as the client disconnects, even while no event is being written.

    Starlette does this itself only for servers older than ASGI 2.4; newer ones report a
    disconnect only when a write fails, which a silent backend may delay for minutes.
    """

    def __init__(
        self, events: AsyncGenerator[bytes, None], close: Callable[[], Awaitable[None]]
    ) -> None:
        super().__init__(
            events,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        self._events = events
        self._close = close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:

                async def write() -> None:
                    with contextlib.suppress(OSError):  # the client went away while we wrote
                        await self.stream_response(send)
                    group.cancel_scope.cancel()

                group.start_soon(write)
                await self.listen_for_disconnect(receive)
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._events.aclose()
                await self._close()  # the backend stream, even if no event was ever sent


def _names_model(raw: bytes) -> bool:
    """Whether a render body asks for a served model (else: a template, for the playground)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return True  # let the model path report the invalid JSON
    return (
        not isinstance(data, dict)
        or "model" in data
        or ("template" not in data and ("chat_template" not in data))
    )


def error_response(error: APIError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status)


def create_app(
    models: Mapping[str, ModelEntry],
    api_key: str | None = None,
    limits: Limits | None = None,
    playground: Playground | None = None,
) -> Starlette:
    """An OpenAI-compatible chat API over ``models`` (name → :class:`ModelEntry`).

    With ``api_key``, every ``/v1`` request needs ``Authorization: Bearer <api_key>``.
    With ``playground`` (see :mod:`.playground`), the page at ``/`` and the template
    endpoints it calls are served too; then ``models`` may be empty. The backends (and the
    playground's sandbox) are closed when the application shuts down.
    """
    if not models and playground is None:
        raise ChatFmtError("the gateway needs at least one model")
    for name, entry in models.items():
        if entry.name != name:
            raise ChatFmtError(f"models[{name!r}] is a ModelEntry named {entry.name!r}")
    models = dict(models)
    limits = limits or Limits()
    expected = f"Bearer {api_key}".encode() if api_key else None

    def guarded(handler: Handler) -> Handler:
        async def run(request: Request) -> Response:
            if expected is not None:
                given = request.headers.get("authorization", "").encode()
                if not secrets.compare_digest(given, expected):
                    return error_response(
                        APIError(
                            401,
                            "missing or wrong API key (send Authorization: Bearer <key>)",
                            code="invalid_api_key",
                        )
                    )
            try:
                return await handler(request)
            except APIError as exc:
                return error_response(exc)

        return run

    async def read_body(request: Request) -> bytes:
        too_large = APIError(
            413,
            f"the request body is larger than {limits.max_body_bytes} bytes",
            code="request_too_large",
        )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
            raise too_large
        parts: list[bytes] = []
        size = 0
        async for part in request.stream():
            size += len(part)
            if size > limits.max_body_bytes:
                raise too_large
            parts.append(part)
        return b"".join(parts)

    def entry_for(name: str) -> ModelEntry:
        entry = models.get(name)
        if entry is None:
            raise APIError(
                404,
                f"the model {name!r} does not exist (models: {', '.join(models)})",
                param="model",
                code="model_not_found",
            )
        return entry

    async def chat_completions(request: Request) -> Response:
        body = parse_body(ChatBody, await read_body(request))
        entry = entry_for(body.model)
        refused = unsupported(body)
        if refused is not None:
            raise refused
        prepared = prepare(entry, body, limits)
        check_length(prepared, limits)
        completion = completion_request(prepared, body)
        if not body.stream:
            return JSONResponse(await complete(prepared, completion))
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        events, close = await start_stream(prepared, completion, include_usage)
        return EventStream(events, close)

    async def render(request: Request) -> Response:
        raw = await read_body(request)
        if playground is not None and not _names_model(raw):
            body_p = parse_body(PlaygroundRenderBody, raw)
            return JSONResponse(await playground_render(playground, body_p))
        body = parse_body(RenderBody, raw)
        entry = entry_for(body.model)
        prepared = prepare(entry, body, limits)
        out: dict[str, Any] = {
            "model": entry.name,
            "prompt": prepared.prompt + prepared.prefill,
            "prefill": prepared.prefill,
        }
        enc = None
        if prepared.prompt_ids is not None:
            enc = encoding_of(prepared, add_generation_prompt=body.add_generation_prompt)
            extra = len(prepared.prompt_ids) - len(enc)  # the prefill: markup, not trained
            out["token_ids"] = list(prepared.prompt_ids)
            out["control"] = [bool(c) for c in enc.control_array.tolist()] + [True] * extra
            out["trained"] = [lab != -100 for lab in enc.labels] + [False] * extra
        if playground is not None:  # the page's view: segments (and tokens) of the prompt
            if enc is not None:  # the encoding already holds them
                out["segments"] = segments_view(enc.segments)
                out["tokens"] = tokens_view(enc)
            else:
                segments = entry.template.segments(
                    prepared.history,
                    add_generation_prompt=body.add_generation_prompt,
                    **prepared.options,
                )
                out["segments"] = segments_view(segments)
        return JSONResponse(out)

    async def parse(request: Request) -> Response:
        assert playground is not None
        body = parse_body(ParseBody, await read_body(request))
        model_template = entry_for(body.model).template if body.model else None
        return JSONResponse(await parse_output(playground, body, model_template))

    async def templates(_request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": template_list(),
                "trust_request_chat_template": bool(
                    playground and playground.trust_request_templates
                ),
                "tokenizer": bool(playground and playground.tokenizer is not None),
                "models": list(models),
            }
        )

    async def index(_request: Request) -> Response:
        return Response(page(), media_type="text/html; charset=utf-8")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            data = static_file(name)
        except KeyError:
            raise HTTPException(404, f"no playground file {name!r}") from None
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return Response(data, media_type=kind)

    async def list_models(_request: Request) -> Response:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "chatfmt"} for name in models
        ]
        return JSONResponse({"object": "list", "data": data})

    async def health(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def http_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kind = "not_found" if exc.status_code == 404 else "invalid_request"
        return error_response(APIError(exc.status_code, str(exc.detail), code=kind))

    async def internal_error(_request: Request, exc: Exception) -> Response:
        log.exception("internal error", exc_info=exc)
        return error_response(
            APIError(
                500, f"internal error: {type(exc).__name__}", type="api_error", code="internal"
            )
        )

    async def close_backends() -> None:
        for entry in models.values():
            await entry.backend.aclose()
        if playground is not None:
            playground.close()

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await close_backends()

    routes = [
        Route("/v1/chat/completions", guarded(chat_completions), methods=["POST"]),
        Route("/v1/render", guarded(render), methods=["POST"]),
        Route("/v1/models", guarded(list_models), methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
    if playground is not None:
        routes += [
            Route("/", index, methods=["GET"]),
            Route("/playground/{name}", asset, methods=["GET"]),
            Route("/v1/templates", guarded(templates), methods=["GET"]),
            Route("/v1/parse", guarded(parse), methods=["POST"]),
        ]
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error, Exception: internal_error},
        lifespan=lifespan,
    )
    app.state.model_names = list(models)
    return app
