"""Any OpenAI-compatible ``/v1/completions`` endpoint (vLLM, LMDeploy, SGLang, llama.cpp's server).

One pooled :class:`aiohttp.ClientSession` per backend and event loop; aiohttp was
chosen over httpx by measurement (about half the client CPU per streamed request,
see ``docs/performance.md``). Streaming uses server-sent events: the response body
is ``data: {json}`` events ending with ``data: [DONE]``.

Engine-specific fields (the penalty's name, a request's constraint) follow the engine's
dialect (:mod:`.dialects`), detected once per backend or configured (``kind``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from .. import fastjson
from ..errors import (
    BackendConnectionError,
    BackendHTTPError,
    BackendProtocolError,
    BackendTimeoutError,
    UnsupportedFeatureError,
)
from .base import (
    Backend,
    CompletionChunk,
    CompletionRequest,
    CompletionResult,
    FinishReason,
    usage_from,
)
from .dialects import (
    EngineKind,
    constraint_fields,
    detect_kind,
    engine_kind,
    sampling_name,
    takes_constraints,
    takes_lazy,
    takes_token_ids,
)
from .lazy import lazy_stream
from .sse import SSEDecoder

#: How much of an error body is kept in a :class:`BackendHTTPError`.
_BODY_LIMIT = 500
#: How long the rest of a body is read after its ``[DONE]`` (see :func:`_drain`).
_DRAIN_SECONDS = 1.0
#: The longest an engine-detection probe may take (an engine answers its own endpoints at once).
_PROBE_TIMEOUT = aiohttp.ClientTimeout(total=10)
#: The engines whose streamed completions carry usage in every chunk when asked
#: (``stream_options.continuous_usage_stats``): the prompt's count comes with the first.
_CONTINUOUS_USAGE = ("vllm", "sglang")


class OpenAICompletionsBackend(Backend):
    """Completions from an OpenAI-compatible server.

    ``base_url`` is the API root ending in ``/v1`` (e.g. ``http://127.0.0.1:8000/v1``).
    ``model`` defaults to the first model the server lists at ``/v1/models``.
    ``connect_timeout`` bounds connecting; ``read_timeout`` bounds the wait for each
    piece of the answer (not the whole generation). ``extra_body`` is merged into every
    request body (engine-specific fields such as ``skip_special_tokens``).
    ``send_token_ids``: send a request's ``prompt_token_ids`` (when it has them) as the
    prompt, as vLLM and SGLang accept, instead of the text.
    ``kind``: the engine (``llama.cpp``, ``llama-cpp-python``, ``vllm``, ``sglang``,
    ``generic``), or ``auto`` to detect it on the first request (:func:`.dialects.detect_kind`).
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
        max_connections: int = 256,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        send_token_ids: bool = False,
        kind: str = "auto",
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise BackendConnectionError(
                f"backend URL must start with http:// or https://, got {base_url!r}"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        self.extra_body = dict(extra_body or {})
        self.send_token_ids = send_token_ids
        self.kind: EngineKind | None = None if kind == "auto" else engine_kind(kind)
        self._models: Any = None  # the /models answer, once fetched
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lookup: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    # ------------------------------------------------------------------ session
    def _client(self) -> aiohttp.ClientSession:
        """The pooled session of the running event loop (a new loop gets a new session)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections),
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=self.connect_timeout, sock_read=self.read_timeout
                ),
                headers=self._headers,
            )
            self._loop = loop
        return self._session

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    # ------------------------------------------------------------------ requests
    def _lookup_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lookup is None or self._lookup[0] is not loop:
            self._lookup = (loop, asyncio.Lock())
        return self._lookup[1]

    async def model_id(self) -> str:
        """The model name sent with requests (the first one the server lists, unless given).

        Looked up once: concurrent first requests wait for the same lookup.
        """
        if self.model is not None:
            return self.model
        async with self._lookup_lock():
            if self.model is None:
                data = self._models = await self._get_json("/models")
                try:
                    self.model = str(data["data"][0]["id"])
                except (KeyError, IndexError, TypeError):
                    raise BackendProtocolError(
                        f"{self.base_url}/models lists no model; pass model= explicitly"
                    ) from None
        return self.model

    async def engine_kind(self) -> EngineKind:
        """The engine's kind: as configured, else detected once (``generic`` if unknown)."""
        if self.kind is not None:
            return self.kind
        async with self._lookup_lock():
            if self.kind is None:
                if self._models is None:
                    self._models = await self._get_json_or_none(self.base_url + "/models")
                root = self.base_url.removesuffix("/v1")
                self.kind = await detect_kind(
                    self._models, lambda path: self._get_json_or_none(root + path)
                )
        return self.kind

    async def _get_json_or_none(self, url: str) -> Any:
        """A probe: the JSON at ``url``, or ``None`` for any failure."""
        try:
            async with self._client().get(url, timeout=_PROBE_TIMEOUT) as resp:
                if resp.status >= 400:
                    return None
                return json.loads(await resp.text(errors="replace"))
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            return None

    # ------------------------------------------------------------------ tokenizer
    async def counts_prompt_in_stream(self) -> bool:
        return await self.engine_kind() in _CONTINUOUS_USAGE

    async def tokenize(self, text: str) -> list[int]:
        """The engine's ids for ``text``, read as its completions endpoint reads a prompt
        (special-token strings as their ids, BOS where the engine adds one): vLLM's and
        SGLang's ``/tokenize``, llama.cpp's ``/tokenize``, llama-cpp-python's
        ``/extras/tokenize``. A ``generic`` engine has none known
        (:class:`~chatfmt.errors.UnsupportedFeatureError`)."""
        kind = await self.engine_kind()
        if kind in ("vllm", "sglang"):
            body: dict[str, Any] = {"model": await self.model_id(), "prompt": text}
            data = await self._post_root("/tokenize", body, kind)
        elif kind == "llama.cpp":
            body = {"content": text, "add_special": True, "parse_special": True}
            data = await self._post_root("/tokenize", body, kind)
        else:
            data = await self._post_root("/extras/tokenize", {"input": text}, kind)
        tokens = data.get("tokens")
        if not isinstance(tokens, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in tokens
        ):
            raise BackendProtocolError(f"{self.base_url}: the tokenize answer has no token ids")
        return tokens

    async def detokenize(self, ids: Sequence[int]) -> str:
        """The engine's text of ``ids`` (``/detokenize``; llama-cpp-python's
        ``/extras/detokenize``); a ``generic`` engine has none known."""
        kind = await self.engine_kind()
        tokens = list(ids)
        if kind in ("vllm", "sglang"):
            body: dict[str, Any] = {"model": await self.model_id(), "tokens": tokens}
            path, field = "/detokenize", "prompt"
        elif kind == "llama.cpp":
            body, path, field = {"tokens": tokens}, "/detokenize", "content"
        else:
            body, path, field = {"tokens": tokens}, "/extras/detokenize", "text"
        text = (await self._post_root(path, body, kind)).get(field)
        if not isinstance(text, str):
            raise BackendProtocolError(f"{self.base_url}: the detokenize answer has no {field!r}")
        return text

    async def _post_root(self, path: str, body: dict[str, Any], kind: EngineKind) -> dict[str, Any]:
        """POST ``body`` to ``path`` at the server's root (beside ``/v1``); its JSON answer."""
        if kind == "generic":
            raise UnsupportedFeatureError(
                f"{self.base_url}: no tokenize endpoint is known for this engine (a generic "
                "OpenAI-compatible server); set its kind (--backend-kind vllm, sglang, "
                "llama.cpp, llama-cpp-python) if it is one of those"
            )
        url = self.base_url.removesuffix("/v1") + path
        async with self._transport(url), self._client().post(url, json=body) as resp:
            await _raise_for_status(resp, url)
            return await _json(resp, url)

    async def ping(self) -> None:
        """``GET /models`` answers (what every engine serves at once)."""
        url = self.base_url + "/models"
        async with self._transport(url), self._client().get(url, timeout=_PROBE_TIMEOUT) as resp:
            await _raise_for_status(resp, url)
            await resp.read()

    def _emulates_lazy(self, kind: EngineKind, request: CompletionRequest) -> bool:
        """Whether ``request``'s lazy constraint is run by chatfmt (:mod:`.lazy`) on ``kind``."""
        constraint = request.constraint
        return (
            constraint is not None
            and bool(constraint.trigger)
            and takes_constraints(kind)
            and not takes_lazy(kind, constraint)
        )

    def _body(
        self, model: str, request: CompletionRequest, stream: bool, kind: EngineKind = "generic"
    ) -> dict[str, Any]:
        ids = self.send_token_ids and takes_token_ids(kind)
        prompt: Any = (
            list(request.prompt_token_ids)
            if request.prompt_token_ids is not None and ids
            else request.prompt
        )
        body: dict[str, Any] = {"model": model, "prompt": prompt, "stream": stream}
        if request.stop:
            body["stop"] = list(request.stop)
        for key in ("max_tokens", "temperature", "top_p", "top_k", "seed", "repetition_penalty"):
            value = getattr(request, key)
            if value is not None:
                body[sampling_name(kind, key)] = value
        if request.constraint is not None:
            body.update(constraint_fields(kind, request.constraint))
        if stream:
            body["stream_options"] = {"include_usage": True}
            if request.prompt_count_first and kind in _CONTINUOUS_USAGE:
                body["stream_options"]["continuous_usage_stats"] = True
        body.update(self.extra_body)
        return body

    @asynccontextmanager
    async def _transport(self, url: str) -> AsyncIterator[None]:
        """Map aiohttp's transport errors (and timeouts) inside the block to chatfmt's
        backend errors naming ``url``; chatfmt's own errors pass through."""
        try:
            yield
        except aiohttp.ClientError as exc:
            raise _connection_error(url, exc, self.read_timeout) from None
        except asyncio.TimeoutError:
            raise BackendTimeoutError(f"{url}: no data within {self.read_timeout} s") from None

    async def _get_json(self, path: str) -> Any:
        url = self.base_url + path
        async with self._transport(url), self._client().get(url) as resp:
            await _raise_for_status(resp, url)
            return await _json(resp, url)

    async def complete(self, request: CompletionRequest) -> CompletionResult:
        model = await self.model_id()
        kind = await self.engine_kind()
        if self._emulates_lazy(kind, request):
            return await super().complete(request)
        url = self.base_url + "/completions"
        body = self._body(model, request, False, kind)
        async with self._transport(url), self._client().post(url, json=body) as resp:
            await _raise_for_status(resp, url)
            data = await _json(resp, url)
        text, finish = _choice(data, url)
        return CompletionResult(text, _finish(finish), usage_from(data.get("usage")))

    def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        return self._stream_one(request, emulate=True)

    async def _stream_one(
        self, request: CompletionRequest, emulate: bool = False
    ) -> AsyncIterator[CompletionChunk]:
        """One streamed completion (``emulate``: a lazy constraint the engine cannot apply
        is run by :func:`.lazy.lazy_stream`, which calls this for each of its parts)."""
        kind = await self.engine_kind()
        if emulate and self._emulates_lazy(kind, request):
            parts = lazy_stream(self._stream_one, request)
            async with contextlib.aclosing(parts):  # type: ignore[type-var]
                async for chunk in parts:
                    yield chunk
            return
        model = await self.model_id()
        url = self.base_url + "/completions"
        finish: str | None = None
        stop: str | None = None
        usage = None
        body = fastjson.dumps(self._body(model, request, True, kind))
        async with self._transport(url), self._client().post(url, data=body) as resp:
            await _raise_for_status(resp, url)
            decoder = SSEDecoder()
            first = True
            read = resp.content.readany
            deadline = _ReadDeadline(resp, self.read_timeout)
            try:
                ended = False
                # One pass and at most one chunk per network read, whatever events it holds:
                # a reader that falls behind the engine then handles (and its client gets)
                # several tokens at once instead of one write per token.
                while not ended:
                    deadline.since = deadline.loop.time()
                    piece = await read()
                    deadline.since = None
                    ended = not piece  # b"": the body ended
                    texts: list[str] = []
                    for data in decoder.feed(piece) if piece else decoder.close():
                        if data == b"[DONE]":
                            ended = True
                            await _drain(resp.content)
                            break
                        event = _loads(data, url)
                        if event.get("usage") is not None:
                            usage = usage_from(event["usage"]) or usage
                        if not event.get("choices"):  # the usage-only chunk
                            continue
                        text, reason = _choice(event, url)
                        if reason:
                            finish, stop = reason, _matched_stop(event)
                        if text:
                            texts.append(text)
                    if texts:
                        n = len(texts)
                        text = texts[0] if n == 1 else "".join(texts)
                        # the first chunk carries the prompt's count where the engine sent it
                        yield CompletionChunk(text, usage=usage if first else None, events=n)
                        first = False
            finally:
                deadline.cancel()
        if finish is None:
            raise BackendProtocolError(f"{url}: the stream ended before a finish_reason was sent")
        yield CompletionChunk("", _finish(finish), usage, stop)


class _ReadDeadline:
    """``read_timeout`` over a streamed body, checked by one timer per stream instead of
    aiohttp's (which cancels and creates a timer at every piece received: the hot loop of
    every stream). The reader sets :attr:`since` while it waits; the timer, due a
    ``read_timeout`` after the wait it last saw began, ends a wait that is that old with
    aiohttp's own timeout error, and otherwise looks again when the current wait would be."""

    __slots__ = ("_content", "_handle", "_timeout", "loop", "since")

    def __init__(self, resp: aiohttp.ClientResponse, timeout: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.since: float | None = None
        self._content = resp.content
        self._timeout = timeout
        self._handle: asyncio.TimerHandle | None = None
        protocol = resp.connection.protocol if resp.connection is not None else None
        if protocol is None or not timeout:
            return  # aiohttp's own timer stays (or there is no timeout)
        protocol.read_timeout = None  # the body's reads: this timer instead
        self._handle = self.loop.call_at(self.loop.time() + timeout, self._check)

    def _check(self) -> None:
        since, now = self.since, self.loop.time()
        if since is not None and now - since >= self._timeout:
            self._handle = None
            self._content.set_exception(
                aiohttp.ServerTimeoutError("no data within the read timeout")
            )
            return
        self._handle = self.loop.call_at(
            (since if since is not None else now) + self._timeout, self._check
        )

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


async def _drain(content: aiohttp.StreamReader) -> None:
    """Read the body to its end after the last event (the engine ends it at once), so that
    the connection goes back to the pool instead of being closed: a new connection per
    request costs both processes more than the request's events. An engine that leaves
    the body open loses its connection after :data:`_DRAIN_SECONDS`."""
    if content.is_eof():
        return
    with contextlib.suppress(asyncio.TimeoutError, aiohttp.ClientError):
        if sys.version_info >= (3, 11):  # a timer, not a task
            async with asyncio.timeout(_DRAIN_SECONDS):
                await content.read()
        else:
            await asyncio.wait_for(content.read(), _DRAIN_SECONDS)


async def _raise_for_status(resp: aiohttp.ClientResponse, url: str) -> None:
    if resp.status < 400:
        return
    body = (await resp.text(errors="replace"))[:_BODY_LIMIT]
    raise BackendHTTPError(f"{url}: HTTP {resp.status}: {body}", status=resp.status, body=body)


async def _json(resp: aiohttp.ClientResponse, url: str) -> dict[str, Any]:
    return _loads(await resp.text(errors="replace"), url)


def _loads(text: str | bytes, url: str) -> dict[str, Any]:
    try:
        data = fastjson.loads(text)
    except ValueError:
        if isinstance(text, bytes):  # not UTF-8: read as the engine meant it, � for the rest
            return _loads(text.decode("utf-8", errors="replace"), url)
        raise BackendProtocolError(f"{url}: answer is not JSON: {text[:120]!r}") from None
    if not isinstance(data, dict):
        raise BackendProtocolError(f"{url}: answer is not a JSON object: {text[:120]!r}")
    return data


def _choice(data: Mapping[str, Any], url: str) -> tuple[str, str | None]:
    """The text and finish reason of the first choice of a completions answer."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise BackendProtocolError(f"{url}: answer has no choices: {json.dumps(data)[:120]}")
    text = choices[0].get("text")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise BackendProtocolError(f"{url}: choices[0].text is not a string")
    reason = choices[0].get("finish_reason")
    return text, reason if isinstance(reason, str) else None


def _matched_stop(data: Mapping[str, Any]) -> str | None:
    """The stop string generation ended at, where the engine tells: vLLM's ``stop_reason``
    (a token id when a stop token matched), SGLang's ``matched_stop``."""
    choice = data["choices"][0]
    for key in ("stop_reason", "matched_stop"):
        value = choice.get(key)
        if isinstance(value, str):
            return value
    return None


def _finish(reason: str | None) -> FinishReason:
    """The engine's finish reason: ``length`` stays, anything else (stop, eos, …) is ``stop``."""
    return "length" if reason == "length" else "stop"


def _connection_error(url: str, exc: aiohttp.ClientError, read_timeout: float) -> Exception:
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return BackendTimeoutError(f"{url}: no data within {read_timeout} s")
    if isinstance(exc, aiohttp.ClientPayloadError):
        return BackendProtocolError(f"{url}: the answer broke off: {exc}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return BackendConnectionError(f"cannot reach {url}: {exc.os_error or exc}")
    return BackendConnectionError(f"{url}: {type(exc).__name__}: {exc}")
