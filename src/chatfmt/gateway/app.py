"""The Starlette application: routes, API key, body limit, errors (OpenAI's shape, and
Anthropic's under ``/v1/messages``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import mimetypes
import secrets
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import ChatFmtError
from . import anthropic, anthropic_wire, completions, metrics, openai_chat, responses, tokenize
from .anthropic_schema import CountTokensBody, MessagesBody
from .anthropic_schema import parse_body as parse_anthropic_body
from .anthropic_schema import unsupported as anthropic_unsupported
from .chat import Prepared, check_length, completion_request, prepare, prompt_tokens
from .choices import Choices
from .errors import APIError
from .events import Last
from .generation import Generation
from .metrics import Metrics, MetricsMiddleware, RawSendApp
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
from .request import ChatRequest
from .response_store import ResponseStore
from .responses_schema import ResponsesBody, body_field
from .schema import ChatBody, RenderBody, parse_body, unsupported
from .signature import ThinkingSigner

log = logging.getLogger("chatfmt.gateway")

Handler = Callable[[Request], Awaitable[Response]]
#: An error's JSON body in one API's shape.
ErrorShape = Callable[[APIError], dict[str, Any]]

#: The paths under which errors have Anthropic's shape.
_ANTHROPIC_PREFIX = "/v1/messages"


class EventStream(StreamingResponse):
    """An SSE response that stops (and closes its generator, and so the backend request)
    as soon as the client disconnects, even while no event is being written.

    Starlette does this itself only for servers older than ASGI 2.4; newer ones report a
    disconnect only when a write fails, which a silent backend may delay for minutes.
    The events are written with the server's own ``send`` (past the middleware, which
    has seen the response start): a stream's hot loop. A :class:`~.events.Last` piece
    ends the body in the same write.
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

    async def _write(self, send: Send, raw: Send) -> None:
        # The first piece is made before the response starts: the headers and the first
        # event then leave back to back (the client, woken by the headers, finds the event
        # already there) instead of the event's work between the two writes.
        events = self._events
        first = await anext(events, None)
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        if first is not None and not await _write_piece(raw, first):
            return
        async for piece in events:  # the hot loop of a stream
            if type(piece) is Last:
                await raw({"type": "http.response.body", "body": bytes(piece), "more_body": False})
                return
            await raw({"type": "http.response.body", "body": piece, "more_body": True})
        await raw({"type": "http.response.body", "body": b"", "more_body": False})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The events are written by this task; a listener task cancels it when the client
        # disconnects (a second task for the writer, as before, cost one more task and one
        # more loop iteration before the first event).
        raw = metrics.raw_send(scope) or send
        task = asyncio.current_task()
        assert task is not None
        gone = False

        def on_gone(listened: asyncio.Task[None]) -> None:
            nonlocal gone
            if not listened.cancelled() and listened.exception() is None:
                gone = True  # the client disconnected: stop writing
                task.cancel()

        listener = asyncio.get_running_loop().create_task(self.listen_for_disconnect(receive))
        listener.add_done_callback(on_gone)
        try:
            await self._write_until_gone(send, raw)
        except asyncio.CancelledError:
            if not gone:
                raise
            if sys.version_info >= (3, 11):
                task.uncancel()
        finally:
            listener.remove_done_callback(on_gone)
            listener.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait((listener,))
                await self._events.aclose()
                await self._close()  # the backend stream, even if no event was ever sent

    async def _write_until_gone(self, send: Send, raw: Send) -> None:
        with contextlib.suppress(OSError):  # the client went away while we wrote
            await self._write(send, raw)


async def _write_piece(raw: Send, piece: bytes) -> bool:
    """Write one piece of a stream's body; ``False`` when it was the last one."""
    if type(piece) is Last:
        await raw({"type": "http.response.body", "body": bytes(piece), "more_body": False})
        return False
    await raw({"type": "http.response.body", "body": piece, "more_body": True})
    return True


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


def error_response(error: APIError, shape: ErrorShape = APIError.body) -> JSONResponse:
    return JSONResponse(shape(error), status_code=error.status)


def _shape_for(request: Request) -> ErrorShape:
    """The error shape of the API ``request`` was sent to."""
    if request.url.path.startswith(_ANTHROPIC_PREFIX):
        return anthropic.error_body
    return APIError.body


# ---------------------------------------------------------------------- handlers without state
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


async def health(_request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = "not_found" if exc.status_code == 404 else "invalid_request"
    return error_response(
        APIError(exc.status_code, str(exc.detail), code=kind), _shape_for(request)
    )


async def internal_error(request: Request, exc: Exception) -> Response:
    log.exception("internal error", exc_info=exc)
    return error_response(
        APIError(500, f"internal error: {type(exc).__name__}", type="api_error", code="internal"),
        _shape_for(request),
    )


# ---------------------------------------------------------------------- the gateway
class Gateway:
    """The state of one application (models, limits, API key, playground) and its handlers.

    Each ``/v1`` handler reads and checks the body, finds the model and runs the steps of
    :mod:`.chat`; :meth:`guarded` adds the API key check and turns an :class:`APIError`
    into its response.
    """

    def __init__(
        self,
        models: Mapping[str, ModelEntry],
        api_key: str | None = None,
        limits: Limits | None = None,
        playground: Playground | None = None,
        response_store: ResponseStore | None = None,
        thinking_secret: str | None = None,
    ) -> None:
        if not models and playground is None:
            raise ChatFmtError("the gateway needs at least one model")
        for name, entry in models.items():
            if entry.name != name:
                raise ChatFmtError(f"models[{name!r}] is a ModelEntry named {entry.name!r}")
        self.models = dict(models)
        self.limits = limits or Limits()
        self.playground = playground
        self.metrics = Metrics()
        #: The responses ``previous_response_id`` may name (``POST /v1/responses``).
        if response_store is None:
            limits = self.limits
            response_store = ResponseStore(limits.stored_responses, limits.stored_response_ttl)
        self.response_store = response_store
        self._expected_key = f"Bearer {api_key}".encode() if api_key else None
        #: Signs the thinking blocks of /v1/messages replies and checks those sent back.
        self.signer = ThinkingSigner(thinking_secret)

    # ------------------------------------------------------------------ the application
    def app(self) -> Starlette:
        """The Starlette application serving this gateway."""
        routes = self.routes()
        app = RawSendApp(
            routes=routes,
            middleware=[Middleware(MetricsMiddleware, metrics=self.metrics, routes=routes)],
            exception_handlers={HTTPException: http_error, Exception: internal_error},
            lifespan=self.lifespan,
        )
        app.state.model_names = list(self.models)
        return app

    def routes(self) -> list[Route]:
        guarded = self.guarded
        routes = [
            Route("/v1/chat/completions", guarded(self.chat_completions), methods=["POST"]),
            Route("/v1/completions", guarded(self.completions), methods=["POST"]),
            Route("/v1/responses", guarded(self.create_response), methods=["POST"]),
            Route("/v1/responses/{response_id}", guarded(self.stored_response), methods=["GET"]),
            Route("/v1/responses/{response_id}", guarded(self.delete_response), methods=["DELETE"]),
            Route("/v1/messages", guarded(self.messages, anthropic.error_body), methods=["POST"]),
            Route(
                "/v1/messages/count_tokens",
                guarded(self.count_tokens, anthropic.error_body),
                methods=["POST"],
            ),
            Route("/v1/render", guarded(self.render), methods=["POST"]),
            Route("/v1/models", guarded(self.list_models), methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", self.metrics_page, methods=["GET"]),
            Route("/tokenize", guarded(self.tokenize), methods=["POST"]),
            Route("/detokenize", guarded(self.detokenize), methods=["POST"]),
        ]
        if self.playground is not None:
            routes += [
                Route("/", index, methods=["GET"]),
                Route("/playground/{name}", asset, methods=["GET"]),
                Route("/v1/templates", guarded(self.templates), methods=["GET"]),
                Route("/v1/parse", guarded(self.parse), methods=["POST"]),
            ]
        return routes

    @asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        """Close the backends (and the playground's sandbox) when the application stops."""
        try:
            yield
        finally:
            for entry in self.models.values():
                await entry.backend.aclose()
            if self.playground is not None:
                self.playground.close()

    # ------------------------------------------------------------------ request steps
    def guarded(self, handler: Handler, shape: ErrorShape = APIError.body) -> Handler:
        """``handler`` behind the API key, with :class:`APIError` s as responses (in
        ``shape``: OpenAI's by default)."""

        async def run(request: Request) -> Response:
            try:
                self.check_key(request)
                return await handler(request)
            except APIError as exc:
                return error_response(exc, shape)

        return run

    def check_key(self, request: Request) -> None:
        """The API key, sent as ``Authorization: Bearer <key>`` or ``x-api-key: <key>``
        (Anthropic's header)."""
        expected = self._expected_key
        if expected is None:
            return
        headers = request.headers
        given = headers.get("authorization", "").encode()
        if not given and "x-api-key" in headers:
            given = b"Bearer " + headers["x-api-key"].encode()
        if not secrets.compare_digest(given, expected):
            raise APIError(
                401,
                "missing or wrong API key (send Authorization: Bearer <key> or x-api-key: <key>)",
                code="invalid_api_key",
            )

    async def read_body(self, request: Request) -> bytes:
        """The request body, refused (413) beyond ``limits.max_body_bytes``."""
        limit = self.limits.max_body_bytes
        too_large = APIError(
            413, f"the request body is larger than {limit} bytes", code="request_too_large"
        )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise too_large
        parts: list[bytes] = []
        size = 0
        async for part in request.stream():
            size += len(part)
            if size > limit:
                raise too_large
            parts.append(part)
        return b"".join(parts)

    def entry_for(self, name: str) -> ModelEntry:
        """The served model named ``name`` (404 if none)."""
        entry = self.models.get(name)
        if entry is None:
            raise APIError(
                404,
                f"the model {name!r} does not exist ("
                + (f"models: {', '.join(self.models)})" if self.models else "no model is served)"),
                param="model",
                code="model_not_found",
            )
        return entry

    # ------------------------------------------------------------------ handlers
    async def chat_completions(self, request: Request) -> Response:
        """``POST /v1/chat/completions``: validate → render → backend → parse → wire."""
        body = parse_body(ChatBody, await self.read_body(request))
        self.entry_for(body.model)  # an unknown model is a 404 before any other check
        refused = unsupported(body)
        if refused is not None:
            raise refused
        chat = openai_chat.chat_request(body)
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        if chat.n > 1:
            choices = self.choices(chat)
            if not body.stream:
                return JSONResponse(await openai_chat.complete_choices(choices))
            await choices.start()
            return EventStream(openai_chat.choice_events(choices, include_usage), choices.aclose)
        generation = self.generation(chat)
        if not body.stream:
            return JSONResponse(await openai_chat.complete(generation))
        await generation.start()
        return EventStream(openai_chat.events(generation, include_usage), generation.aclose)

    async def completions(self, request: Request) -> Response:
        """``POST /v1/completions``: the prompt passed through to the model's backend."""
        body = parse_body(completions.CompletionsBody, await self.read_body(request))
        entry = self.entry_for(body.model)
        refused = completions.unsupported(body)
        if refused is not None:
            raise refused
        raw = completions.RawCompletion(body, entry)
        if not body.stream:
            return JSONResponse(await raw.whole())
        await raw.start()
        return EventStream(raw.events(), raw.aclose)

    async def create_response(self, request: Request) -> Response:
        """``POST /v1/responses``: the body as a chat request, then the same pipeline."""
        body = parse_body(ResponsesBody, await self.read_body(request), body_field)
        entry = self.entry_for(body.model)
        refused = responses.refused(body)
        if refused is not None:
            raise refused
        previous = None
        if body.previous_response_id is not None:
            previous = self.response_store.get(body.previous_response_id)
            if previous is None:
                raise APIError(  # as OpenAI answers it: a 400 with this code
                    400,
                    f"previous response {body.previous_response_id!r} not found (it was not "
                    "stored, was stored with store: false, or has expired)",
                    param="previous_response_id",
                    code="previous_response_not_found",
                )
        translated = responses.chat_request(body, entry.template, previous)
        try:
            generation = self.generation(translated.chat)
        except APIError as exc:
            # ``instructions`` and system items: one system message, if the template wants it
            joined = translated.one_system_message()
            try:
                if joined is None:
                    raise
                generation = self.generation(joined.chat)
            except APIError:
                raise responses.located(exc, translated.sources) from None
        writer = responses.ResponseWriter(
            body, translated, generation, self.response_store, previous
        )
        if not body.stream:
            return JSONResponse(await responses.create(writer))
        await generation.start()
        return EventStream(responses.events(writer), generation.aclose)

    async def stored_response(self, request: Request) -> Response:
        """``GET /v1/responses/{id}``: a stored response object."""
        return JSONResponse(self._stored(request.path_params["response_id"]).resource)

    async def delete_response(self, request: Request) -> Response:
        """``DELETE /v1/responses/{id}``: forget a stored response."""
        response_id = request.path_params["response_id"]
        self._stored(response_id)
        self.response_store.delete(response_id)
        return JSONResponse({"id": response_id, "object": "response", "deleted": True})

    def _stored(self, response_id: str) -> Any:
        stored = self.response_store.get(response_id)
        if stored is None:
            raise APIError(
                404,
                f"response {response_id!r} not found (not stored, or expired)",
                param="response_id",
                code="not_found",
            )
        return stored

    async def messages(self, request: Request) -> Response:
        """``POST /v1/messages`` (Anthropic): the body as the internal request → the
        pipeline → ``message`` or its stream events."""
        body = parse_anthropic_body(MessagesBody, await self.read_body(request))
        entry = self.entry_for(body.model)
        refused = anthropic_unsupported(body)
        if refused is not None:
            raise refused
        translated = anthropic.chat_request(body, entry.template, self.signer)
        with anthropic.located(translated.origins):
            generation = self.generation(translated.chat)
        stops = translated.chat.sampling.stop
        if not body.stream:
            return JSONResponse(await anthropic_wire.complete(generation, self.signer, stops))
        input_tokens = await generation.start_counted()
        events = anthropic_wire.events(generation, self.signer, stops, input_tokens)
        return EventStream(events, generation.aclose)

    async def count_tokens(self, request: Request) -> Response:
        """``POST /v1/messages/count_tokens`` (Anthropic): the prompt's token count."""
        body = parse_anthropic_body(CountTokensBody, await self.read_body(request))
        entry = self.entry_for(body.model)
        translated = anthropic.chat_request(body, entry.template, self.signer)
        with anthropic.located(translated.origins):
            prepared = prepare(entry, translated.chat, self.limits)
        return JSONResponse({"input_tokens": await prompt_tokens(prepared)})

    def generation(self, chat: ChatRequest) -> Generation:
        """The pipeline every API shares: the request validated, rendered, length-checked,
        and its generation ready to start."""
        prepared = self._prepared(chat)
        return Generation(prepared, completion_request(prepared, chat))

    def choices(self, chat: ChatRequest) -> Choices:
        """:meth:`generation` for ``chat.n`` replies: the prompt rendered once, ``n``
        generations (see :mod:`.choices`)."""
        prepared = self._prepared(chat)
        return Choices.of(prepared, completion_request(prepared, chat), chat.n)

    def _prepared(self, chat: ChatRequest) -> Prepared:
        prepared = prepare(self.entry_for(chat.model), chat, self.limits)
        check_length(prepared, self.limits)
        return prepared

    async def render(self, request: Request) -> Response:
        """``POST /v1/render``: the prompt of a chat request (or the playground's view of a
        template's, when the body names a template instead of a model)."""
        raw = await self.read_body(request)
        if self.playground is not None and not _names_model(raw):
            body_p = parse_body(PlaygroundRenderBody, raw)
            return JSONResponse(await playground_render(self.playground, body_p))
        body = parse_body(RenderBody, raw)
        prepared = prepare(self.entry_for(body.model), openai_chat.chat_request(body), self.limits)
        return JSONResponse(self._render_view(prepared, body.add_generation_prompt))

    def _render_view(self, prepared: Prepared, add_generation_prompt: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": prepared.entry.name,
            "prompt": prepared.prompt,
            "prefill": prepared.prefill,
        }
        if prepared.constraint is not None:  # what the reply is constrained to
            out["constraint"] = {
                "gbnf": prepared.constraint.gbnf,
                "trigger": prepared.constraint.trigger,
            }
        enc = prepared.rendered.encoding
        if enc is not None and prepared.prompt_ids is not None:
            extra = len(prepared.prompt_ids) - len(enc)  # the prefill: markup, not trained
            out["token_ids"] = list(prepared.prompt_ids)
            out["control"] = [bool(c) for c in enc.control_array.tolist()] + [True] * extra
            out["trained"] = [lab != -100 for lab in enc.labels] + [False] * extra
        if self.playground is not None:  # the page's view: segments (and tokens) of the prompt
            if enc is not None:  # the encoding already holds them
                out["segments"] = segments_view(enc.segments)
                out["tokens"] = tokens_view(enc)
            else:
                segments = prepared.entry.template.segments(
                    prepared.rendered.messages,
                    add_generation_prompt=add_generation_prompt,
                    **prepared.chat.options,
                )
                out["segments"] = segments_view(segments)
        return out

    async def parse(self, request: Request) -> Response:
        """``POST /v1/parse`` (playground): raw output read by a template's parser."""
        assert self.playground is not None
        body = parse_body(ParseBody, await self.read_body(request))
        model_template = self.entry_for(body.model).template if body.model else None
        return JSONResponse(await parse_output(self.playground, body, model_template))

    async def templates(self, _request: Request) -> Response:
        """``GET /v1/templates`` (playground): the registered templates and what is served."""
        playground = self.playground
        return JSONResponse(
            {
                "object": "list",
                "data": template_list(),
                "trust_request_chat_template": bool(
                    playground and playground.trust_request_templates
                ),
                "tokenizer": bool(playground and playground.tokenizer is not None),
                "models": list(self.models),
            }
        )

    async def tokenize(self, request: Request) -> Response:
        """``POST /tokenize``: a prompt's (or a rendered chat's) token ids (vLLM's shape)."""
        body = parse_body(tokenize.TokenizeBody, await self.read_body(request))
        entry = self.entry_for(body.model)
        return JSONResponse(await tokenize.tokenize(entry, body, self.limits))

    async def detokenize(self, request: Request) -> Response:
        """``POST /detokenize``: the text of token ids."""
        body = parse_body(tokenize.DetokenizeBody, await self.read_body(request))
        return JSONResponse(await tokenize.detokenize(self.entry_for(body.model), body))

    async def metrics_page(self, _request: Request) -> Response:
        """``GET /metrics``: the gateway's metrics in Prometheus' text format (no API key:
        scrapers rarely send one; the figures hold no request content)."""
        return Response(self.metrics.exposition(), media_type=self.metrics.content_type)

    async def list_models(self, _request: Request) -> Response:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "chatfmt"}
            for name in self.models
        ]
        return JSONResponse({"object": "list", "data": data})


def create_app(
    models: Mapping[str, ModelEntry],
    api_key: str | None = None,
    limits: Limits | None = None,
    playground: Playground | None = None,
    response_store: ResponseStore | None = None,
    thinking_secret: str | None = None,
) -> Starlette:
    """An OpenAI-compatible chat API over ``models`` (name → :class:`ModelEntry`):
    ``/v1/chat/completions`` and ``/v1/responses``; and Anthropic's Messages API
    (``/v1/messages``).

    With ``api_key``, every ``/v1`` request needs ``Authorization: Bearer <api_key>`` (or
    ``x-api-key: <api_key>``). ``thinking_secret`` keys the signatures of Anthropic
    thinking blocks (random per process when ``None``; see :mod:`.signature`).
    With ``playground`` (see :mod:`.playground`), the page at ``/`` and the template
    endpoints it calls are served too; then ``models`` may be empty. ``response_store``
    keeps the responses ``previous_response_id`` names (default: ``limits.stored_responses``
    of them, each ``limits.stored_response_ttl`` seconds). The backends (and the
    playground's sandbox) are closed when the application shuts down.
    """
    return Gateway(
        models, api_key, limits, playground, response_store, thinking_secret=thinking_secret
    ).app()
