"""Completion backends: one small async interface in front of every engine.

``Backend.stream(request)`` yields :class:`CompletionChunk` s, ``Backend.complete(request)``
returns a :class:`CompletionResult`; :class:`SyncBackend` wraps either for blocking code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    Backend,
    CompletionChunk,
    CompletionRequest,
    CompletionResult,
    FinishReason,
    Usage,
)
from .scripted import ScriptedBackend, ScriptedReply
from .sync import SyncBackend

if TYPE_CHECKING:
    from .openai import OpenAICompletionsBackend


def __getattr__(name: str) -> Any:
    if name == "OpenAICompletionsBackend":  # imports aiohttp: only when used
        from .openai import OpenAICompletionsBackend

        return OpenAICompletionsBackend
    raise AttributeError(f"module 'chatfmt.backends' has no attribute {name!r}")


__all__ = [
    "Backend",
    "CompletionChunk",
    "CompletionRequest",
    "CompletionResult",
    "FinishReason",
    "OpenAICompletionsBackend",
    "ScriptedBackend",
    "ScriptedReply",
    "SyncBackend",
    "Usage",
]
