"""LMDeploy's real ``/v1/chat/completions`` handler over a fake engine (no model, no GPU).

:func:`chat_endpoint` registers LMDeploy's own chat-completions route on a server context whose
engine yields given output pieces as LMDeploy's engine would (``response`` text and
``token_ids`` per step, ``finish_reason`` on the last), with parsers chosen by name through
LMDeploy's own ``api_server.set_parsers``. :func:`run_chat` calls it and returns the
streamed SSE events or the whole response. Shared by the serving-path test and the benchmark.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, ClassVar

from engine_pieces import sse_events

MODEL = "fake-model"


class _Session:
    def __init__(self, session_id: int) -> None:
        self.session_id = session_id
        self.epoch = 0

    async def async_abort(self) -> None:
        return None


class _Sessions:
    def __init__(self) -> None:
        self.sessions: dict[int, _Session] = {}

    def get(self, session_id: int | None = None, **_: Any) -> _Session:
        session_id = len(self.sessions) if session_id is None else session_id
        return self.sessions.setdefault(session_id, _Session(session_id))

    def has(self, session_id: int) -> bool:
        return session_id in self.sessions

    def remove(self, session: Any) -> None:
        self.sessions.pop(getattr(session, "session_id", session), None)


class FakeEngine:
    """Yields ``pieces`` (text, token ids) as one streamed generation."""

    model_name = MODEL
    arch = "Qwen3ForCausalLM"
    chat_template = None  # read by the Anthropic router (inline system messages)
    backend_config = SimpleNamespace(adapters=[], logprobs_mode=None)

    def __init__(self, tokenizer: Any = None) -> None:
        self.session_mgr = _Sessions()
        self.tokenizer = SimpleNamespace(model=SimpleNamespace(model=tokenizer))
        self.pieces: Sequence[tuple[str, list[int]]] = ()

    async def preprocess(self, messages: Any, session: Any, **_: Any) -> Any:
        return SimpleNamespace(messages=messages, session=session)

    def generate(self, preprocessed: Any, **_: Any) -> Any:
        pieces = self.pieces

        async def stream() -> Any:
            for n, (text, ids) in enumerate(pieces):
                yield SimpleNamespace(
                    response=text,
                    token_ids=ids,
                    input_token_len=4,
                    generate_token_len=n + 1,
                    finish_reason="stop" if n == len(pieces) - 1 else None,
                    logprobs=None,
                    cached_tokens=0,
                    routed_experts=None,
                    cache_block_ids=None,
                )

        return stream()


class FakeServerContext:
    """What LMDeploy's chat handler reads from its server context."""

    response_parser_cls: Any = None

    def __init__(self, tokenizer: Any = None) -> None:
        self.async_engine = FakeEngine(tokenizer)
        self.default_gen_config: dict[str, Any] = {}

    @property
    def engine_config(self) -> Any:
        return self.async_engine.backend_config

    @property
    def session_manager(self) -> _Sessions:
        return self.async_engine.session_mgr

    def create_session(self, user_session_id: Any) -> _Session:
        return self.session_manager.get(None)


class _RawRequest:
    headers: ClassVar[dict[str, str]] = {"anthropic-version": "2023-06-01"}  # Anthropic route

    def __init__(self, payload: dict[str, Any]) -> None:
        self._payload = payload

    async def json(self) -> dict[str, Any]:
        return dict(self._payload)

    async def is_disconnected(self) -> bool:
        return False


#: The routes :func:`endpoint` serves: path → LMDeploy's function that builds its router.
ROUTES = {
    "/v1/chat/completions": "lmdeploy.serve.openai.chat_completions:register",
    "/v1/responses": "lmdeploy.serve.openai.responses.serving:create_responses_router",
    "/v1/messages": "lmdeploy.serve.anthropic.router:create_anthropic_router",
}


def endpoint(
    path: str, tool_parser: str | None, reasoning_parser: str | None, tokenizer: Any = None
) -> tuple[Any, FakeServerContext]:
    """LMDeploy's own handler of ``path`` (see :data:`ROUTES`), on a fake server context with
    parsers chosen as ``lmdeploy serve`` does (``api_server.set_parsers``)."""
    import importlib

    from fastapi import APIRouter
    from lmdeploy.serve.openai import api_server

    context = FakeServerContext(tokenizer)
    api_server.set_parsers(context, reasoning_parser, tool_parser)
    module, _, name = ROUTES[path].partition(":")
    build = getattr(importlib.import_module(module), name)
    router = APIRouter()
    router = build(router, context) or router if name == "register" else build(context)
    return next(r.endpoint for r in router.routes if r.path == path), context


def chat_endpoint(
    tool_parser: str | None, reasoning_parser: str | None, tokenizer: Any = None
) -> tuple[Any, FakeServerContext]:
    """LMDeploy's chat-completions endpoint with parsers chosen as ``lmdeploy serve`` does."""
    return endpoint("/v1/chat/completions", tool_parser, reasoning_parser, tokenizer)


def run_chat(
    endpoint: Any,
    context: FakeServerContext,
    pieces: Sequence[tuple[str, list[int]]],
    payload: dict[str, Any],
) -> Any:
    """One request: the SSE event dicts when ``payload["stream"]``, else the response dict."""
    from typing import get_type_hints

    context.async_engine.pieces = pieces
    body = get_type_hints(endpoint)["request"](**payload)  # the route's own request model

    async def call() -> Any:
        response = await endpoint(body, _RawRequest(payload))
        if isinstance(response, dict):
            return response
        if not payload.get("stream"):
            if hasattr(response, "body"):  # an error response
                return json.loads(response.body)
            return response.model_dump(mode="json") if hasattr(response, "model_dump") else response
        return await sse_events(response.body_iterator)

    return asyncio.run(call())
