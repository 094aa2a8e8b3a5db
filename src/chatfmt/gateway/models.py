"""What the gateway serves: models (backend + template + tokenizer) and request limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backends.base import Backend
from ..template import Template


@dataclass
class ModelEntry:
    """One model name the gateway answers to.

    ``tokenizer`` (a chatfmt tokenizer, optional) gives token ids for ``/v1/render``,
    usage counts and the prompt-length check; without one, the backend's own tokenizer
    is used when it has one (the embedded model). ``strict_history``: render history as
    the official template does, or refuse it (400) where that would drop data (see
    docs/rendering.md).
    """

    name: str
    backend: Backend
    template: Template
    tokenizer: Any = None
    strict_history: bool = False

    @property
    def active_tokenizer(self) -> Any:
        """The tokenizer in use: the configured one, else the backend's (``None`` if neither)."""
        if self.tokenizer is not None:
            return self.tokenizer
        return getattr(self.backend, "tokenizer", None)


@dataclass(frozen=True)
class Limits:
    """Request limits. ``max_prompt_tokens`` defaults to each template's ``session_len``
    (checked only when a tokenizer is known). ``stored_responses`` responses are kept for
    ``previous_response_id`` (``POST /v1/responses``), each ``stored_response_ttl`` seconds."""

    max_body_bytes: int = 8 * 1024 * 1024
    max_messages: int = 2048
    max_prompt_tokens: int | None = None
    stored_responses: int = 1024
    stored_response_ttl: int = 3600
