"""``POST /v1/completions``: raw completions passed through to the model's backend.

No template and no parser: the prompt (a string, token ids, or a list of either) goes to the
served model's :class:`~chatfmt.backends.Backend` as it is, with the request's own stop
words and sampling, and the text comes back in OpenAI's ``text_completion`` shape (whole,
or as events). So ``chatfmt serve`` is itself a completions backend — for ``chatfmt chat
--backend URL``, the agent, or any tool that renders its own prompts — with the same model
names, API key, engine pool and limits as its chat API.

``n`` samples each prompt ``n`` times (choice ``index`` = prompt × ``n`` + sample; a fixed
``seed`` becomes ``seed + sample``); ``echo`` puts the prompt before the text; ``max_tokens``
defaults to 16, as in OpenAI's API. A prompt of token ids needs a tokenizer (for the
engines that take text). ``logprobs``, ``suffix``, ``best_of`` other than ``n``,
``logit_bias``, penalties other than 0 and engine-specific constraint fields are refused
with a 400 naming the field, never ignored.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from pydantic import Field

from ..backends.base import Backend, CompletionChunk, CompletionRequest, Usage
from ..errors import ChatFmtError, ValidationError
from . import wire
from .choices import MAX_CHOICES, interleave, requests_for, start_all
from .errors import APIError, api_error
from .models import ModelEntry
from .schema import StreamOptions, _Body

#: Constraint fields of engines (llama.cpp, vLLM, SGLang): refused, since they are not passed on.
_CONSTRAINT_FIELDS = (
    "grammar",
    "json_schema",
    "response_format",
    "structured_outputs",
    "guided_json",
    "guided_regex",
    "guided_choice",
    "guided_grammar",
    "ebnf",
    "regex",
)


class CompletionsBody(_Body):
    """``POST /v1/completions``."""

    model: str
    prompt: str | list[int] | list[str] | list[list[int]]
    max_tokens: int = Field(default=16, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    repetition_penalty: float | None = Field(default=None, gt=0)
    seed: int | None = None
    n: int = Field(default=1, ge=1, le=MAX_CHOICES)
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    echo: bool = False
    # Declared to be refused when set (see ``unsupported``).
    suffix: str | None = None
    logprobs: int | None = None
    best_of: int | None = None
    logit_bias: dict[str, Any] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    grammar: Any = None
    json_schema: Any = None
    response_format: Any = None
    structured_outputs: Any = None
    guided_json: Any = None
    guided_regex: Any = None
    guided_choice: Any = None
    guided_grammar: Any = None
    ebnf: Any = None
    regex: Any = None


def unsupported(body: CompletionsBody) -> APIError | None:
    """A 400 for a field that is not passed on (never silently ignored)."""

    def refuse(param: str, why: str) -> APIError:
        return APIError(400, f"{param}: {why}", param=param, code="unsupported_value")

    if body.logprobs:
        return refuse("logprobs", "logprobs are not supported")
    if body.suffix:
        return refuse("suffix", "a suffix (insertion) is not supported")
    if body.best_of not in (None, 1, body.n):
        return refuse("best_of", "only best_of = n is supported (no ranking of samples)")
    if body.logit_bias:
        return refuse("logit_bias", "logit_bias is not supported")
    for name in ("presence_penalty", "frequency_penalty"):
        if getattr(body, name):
            return refuse(name, "not supported (repetition_penalty is)")
    for name in _CONSTRAINT_FIELDS:
        if getattr(body, name) is not None:
            return refuse(
                name,
                "constraints are not passed through /v1/completions; the chat APIs "
                "(/v1/chat/completions with tools or response_format) constrain replies",
            )
    return None


# ---------------------------------------------------------------------- requests
def prompts(body: CompletionsBody, entry: ModelEntry) -> list[tuple[str, tuple[int, ...] | None]]:
    """The prompts as (text, ids): ids are decoded with the model's tokenizer."""
    raw = body.prompt
    items: list[Any] = [raw] if isinstance(raw, str) or _ids(raw) else list(raw)
    if not items:
        raise APIError(400, "prompt: must not be empty", param="prompt", code="invalid_value")
    out: list[tuple[str, tuple[int, ...] | None]] = []
    for item in items:
        if isinstance(item, str):
            out.append((item, None))
            continue
        tokenizer = entry.active_tokenizer
        if tokenizer is None:
            raise APIError(
                400,
                f"prompt: token ids need a tokenizer, and none is known for model "
                f"{entry.name!r}; send the prompt as text, or serve it with --tokenizer PATH",
                param="prompt",
                code="tokenizer_unavailable",
            )
        out.append((tokenizer.decode(item), tuple(item)))
    return out


def _ids(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, int) for v in value)


def backend_requests(body: CompletionsBody, entry: ModelEntry) -> list[CompletionRequest]:
    """One backend request per choice: prompt × ``n`` (a fixed seed becomes seed + i)."""
    found = prompts(body, entry)
    if len(found) * body.n > MAX_CHOICES:
        raise APIError(
            400,
            f"{len(found)} prompts × n = {body.n} is more than {MAX_CHOICES} completions",
            param="n",
            code="invalid_value",
        )
    stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    sampling = {
        name: value
        for name in ("temperature", "top_p", "top_k", "repetition_penalty", "seed")
        if (value := getattr(body, name)) is not None
    }
    out: list[CompletionRequest] = []
    try:
        for text, ids in found:
            request = CompletionRequest(
                text,
                stop=tuple(stop),
                max_tokens=body.max_tokens,
                prompt_token_ids=ids,
                **sampling,
            )
            out.extend(requests_for(request, body.n))
    except ValidationError as exc:
        raise api_error(exc) from None
    return out


# ---------------------------------------------------------------------- generation
class RawChoice:
    """One backend stream, started (its first chunk read) before anything is answered."""

    def __init__(self, backend: Backend, request: CompletionRequest) -> None:
        self.request = request
        self._stream = backend.stream(request)
        self._first: list[CompletionChunk] = []
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    async def start(self) -> None:
        """Wait for the first chunk (an :class:`APIError` if the backend fails first)."""
        try:
            async for chunk in self._stream:
                self._first.append(chunk)
                break
        except ChatFmtError as exc:
            await self.aclose()
            raise api_error(exc) from None
        except BaseException:
            await self.aclose()
            raise

    async def chunks(self) -> AsyncIterator[CompletionChunk]:
        """Every chunk (the first one included); notes the finish reason and usage."""
        for chunk in self._first:
            yield self._note(chunk)
        self._first = []
        async for chunk in self._stream:
            yield self._note(chunk)

    def _note(self, chunk: CompletionChunk) -> CompletionChunk:
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage
        return chunk

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class RawCompletion:
    """The choices of one ``/v1/completions`` request."""

    def __init__(self, body: CompletionsBody, entry: ModelEntry) -> None:
        self.body = body
        self.entry = entry
        self.choices = [RawChoice(entry.backend, r) for r in backend_requests(body, entry)]
        self.head = {
            "id": "cmpl-" + secrets.token_hex(12),
            "object": "text_completion",
            "created": int(time.time()),
            "model": entry.name,
        }

    async def start(self) -> None:
        """Start every choice side by side (an :class:`APIError` if one fails first)."""
        await start_all([c.start() for c in self.choices], self.aclose)

    async def aclose(self) -> None:
        for choice in self.choices:
            await choice.aclose()

    def usage(self) -> dict[str, int] | None:
        """Each prompt counted once, every choice's completion summed (``None`` if unknown)."""
        n = self.body.n
        prompt = completion = 0
        for index, choice in enumerate(self.choices):
            usage = choice.usage
            if usage is None or usage.completion_tokens is None:
                return None
            if index % n == 0:
                counted = usage.prompt_tokens
                ids = choice.request.prompt_token_ids
                if counted is None and ids is not None:
                    counted = len(ids)
                if counted is None:
                    return None
                prompt += counted
            completion += usage.completion_tokens
        return wire.usage(prompt, completion)

    def _choice(self, index: int, text: str, finish: str | None) -> dict[str, Any]:
        return {"index": index, "text": text, "logprobs": None, "finish_reason": finish}

    async def whole(self) -> dict[str, Any]:
        """The ``text_completion`` object."""
        await self.start()
        texts = ["" for _ in self.choices]
        try:
            async for index, chunk in interleave([c.chunks() for c in self.choices]):
                if chunk is not None:
                    texts[index] += chunk.text
        except ChatFmtError as exc:
            raise api_error(exc) from None
        finally:
            await self.aclose()
        echo = self.body.echo
        out: dict[str, Any] = {
            **self.head,
            "choices": [
                self._choice(i, (c.request.prompt if echo else "") + t, c.finish_reason)
                for i, (c, t) in enumerate(zip(self.choices, texts, strict=True))
            ],
        }
        usage = self.usage()
        if usage is not None:
            out["usage"] = usage
        return out

    async def events(self) -> AsyncGenerator[bytes, None]:
        """The events of a started request (a failure midway: one error event, the end)."""
        head = self.head
        try:
            if self.body.echo:
                for i, c in enumerate(self.choices):
                    yield wire.sse({**head, "choices": [self._choice(i, c.request.prompt, None)]})
            async for index, chunk in interleave([c.chunks() for c in self.choices]):
                if chunk is not None and (chunk.text or chunk.finish_reason):
                    choice = self._choice(index, chunk.text, chunk.finish_reason)
                    yield wire.sse({**head, "choices": [choice]})
            options = self.body.stream_options
            if options is not None and options.include_usage:
                yield wire.sse({**head, "choices": [], "usage": self.usage()})
            yield wire.DONE
        except ChatFmtError as exc:
            yield wire.sse(api_error(exc).body())
        finally:
            await self.aclose()
