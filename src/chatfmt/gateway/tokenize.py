"""``POST /tokenize`` and ``POST /detokenize``, in vLLM's shapes.

``/tokenize`` takes ``{"model", "prompt"}`` (the text as it is) or ``{"model", "messages",
…}`` (rendered by the model's template first, as ``/v1/render`` does) and answers
``{"tokens", "count", "max_model_len"}``; ``/detokenize`` takes ``{"model", "tokens"}`` and
answers ``{"prompt"}``. The tokenizer is the one chatfmt knows for the model (``--tokenizer``,
the embedded model's), else the engine's tokenize endpoint; without either, a 400 says how
to provide one.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..errors import ChatFmtError, UnsupportedFeatureError
from . import openai_chat
from .chat import context_length, engine_token_ids, no_tokenizer, prepare, prompt_token_ids
from .errors import APIError, api_error
from .models import Limits, ModelEntry
from .schema import RenderBody, _Body


class TokenizeBody(_Body):
    """``POST /tokenize``: exactly one of ``prompt`` and ``messages``."""

    model: str
    prompt: str | None = None
    messages: list[Any] | None = None
    tools: list[Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    add_generation_prompt: bool = True
    #: For ``prompt``: prepend BOS where the model's tokenizer does (default yes; an
    #: engine's endpoint always reads the prompt as its completions do). Messages are
    #: rendered with the template's own markup.
    add_special_tokens: bool = True


class DetokenizeBody(_Body):
    """``POST /detokenize``."""

    model: str
    tokens: list[int] = Field(max_length=1_000_000)


async def tokenize(entry: ModelEntry, body: TokenizeBody, limits: Limits) -> dict[str, Any]:
    """The answer of ``/tokenize`` for ``body`` (``entry``: the model it names)."""
    if (body.prompt is None) == (body.messages is None):
        raise APIError(
            400, "send either prompt or messages", param="prompt", code="invalid_request"
        )
    if body.messages is not None:
        render = RenderBody(
            model=body.model,
            messages=body.messages,
            tools=body.tools,
            chat_template_kwargs=body.chat_template_kwargs,
            add_generation_prompt=body.add_generation_prompt,
        )
        prepared = prepare(entry, openai_chat.chat_request(render), limits)
        ids = await prompt_token_ids(prepared)
    else:
        assert body.prompt is not None
        tokenizer = entry.active_tokenizer
        if tokenizer is not None:
            ids = list(tokenizer.encode(body.prompt, add_special_tokens=body.add_special_tokens))
        else:
            ids = await engine_token_ids(entry, body.prompt)
    return {"tokens": ids, "count": len(ids), "max_model_len": context_length(entry, limits)}


async def detokenize(entry: ModelEntry, body: DetokenizeBody) -> dict[str, Any]:
    """The answer of ``/detokenize`` for ``body``."""
    tokenizer = entry.active_tokenizer
    if tokenizer is not None:
        try:
            return {"prompt": tokenizer.decode(body.tokens)}
        except (ValueError, TypeError, OverflowError, IndexError) as exc:
            raise APIError(
                400, f"tokens: not ids of this model's tokenizer ({exc})", param="tokens"
            ) from None
    try:
        return {"prompt": await entry.backend.detokenize(body.tokens)}
    except UnsupportedFeatureError as exc:
        raise no_tokenizer(entry, exc, what="detokenize") from None
    except ChatFmtError as exc:
        raise api_error(exc) from None
