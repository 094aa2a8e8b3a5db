"""The one internal chat request every wire API is translated to.

``/v1/chat/completions``, ``/v1/responses`` and ``/v1/messages`` each validate their own body
(pydantic, at the edge) and translate it to a :class:`ChatRequest`: messages in chatfmt's
message model (OpenAI chat shape, validated by :func:`chatfmt.validate_conversation` in
:func:`chatfmt.gateway.chat.validate`), tools, ``tool_choice``, the structured output asked
for and the sampling settings. From there one pipeline (:mod:`.chat`, :mod:`.generation`)
renders, generates, parses and checks the reply; each API only writes its own wire shapes
from the typed parser deltas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: ``tool_choice`` in OpenAI chat form: ``auto``/``none``/``required`` or
#: ``{"type": "function", "function": {"name": N}}``.
WireToolChoice = str | dict[str, Any] | None


@dataclass(frozen=True)
class Sampling:
    """How the reply is generated (``None``: the template's default, else the backend's)."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    seed: int | None = None
    #: Stop sequences of the request, besides the template's own stop words.
    stop: tuple[str, ...] = ()

    def overrides(self) -> dict[str, Any]:
        """The fields that are set, as :class:`~chatfmt.backends.CompletionRequest` fields
        (``stop`` excepted)."""
        names = ("max_tokens", "temperature", "top_p", "top_k", "repetition_penalty", "seed")
        return {name: value for name in names if (value := getattr(self, name)) is not None}


@dataclass(frozen=True)
class ChatRequest:
    """A chat request, whatever API it came through (not yet validated against the model).

    ``messages`` and ``tools`` are in OpenAI chat form (chatfmt's message model): each
    adapter translates its API's items and blocks to them.
    """

    model: str
    messages: Sequence[Any]
    tools: Sequence[Any] | None = None
    tool_choice: WireToolChoice = None
    parallel_tool_calls: bool | None = None
    #: ``json_object`` / ``json_schema`` in chat-completions form (``None``: text).
    response_format: Mapping[str, Any] | None = None
    #: Template options (``chat_template_kwargs``, a thinking switch, …).
    options: Mapping[str, Any] = field(default_factory=dict)
    sampling: Sampling = field(default_factory=Sampling)
    #: How many replies to generate for the one prompt.
    n: int = 1
    add_generation_prompt: bool = True
