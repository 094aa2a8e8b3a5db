"""A backend that replays scripted outputs and records the requests it was sent (for tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from ..errors import BackendError
from .base import Backend, CompletionChunk, CompletionRequest, FinishReason, Usage


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted completion: its text, how it ends, and how to cut it into chunks."""

    text: str
    finish_reason: FinishReason = "stop"
    chunk_size: int = 4


class ScriptedBackend(Backend):
    """Replays ``replies`` in order, one per request; ``requests`` records what was asked.

    A reply is a string or a :class:`ScriptedReply`. With ``honor_stop`` (the
    default) the text is cut at the first of the request's stop words, as a real
    engine does; ``include_stop`` keeps that stop word in the output (engines differ
    on this, and the parsers accept both).
    """

    def __init__(
        self,
        replies: Iterable[str | ScriptedReply],
        *,
        honor_stop: bool = True,
        include_stop: bool = False,
    ) -> None:
        self._replies = [r if isinstance(r, ScriptedReply) else ScriptedReply(r) for r in replies]
        self._next = 0
        self.honor_stop = honor_stop
        self.include_stop = include_stop
        self.requests: list[CompletionRequest] = []

    @property
    def prompts(self) -> list[str]:
        """The prompts received, in order."""
        return [r.prompt for r in self.requests]

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been used yet."""
        return len(self._replies) - self._next

    def _cut(
        self, reply: ScriptedReply, request: CompletionRequest
    ) -> tuple[str, FinishReason, str | None]:
        """The text as the engine returns it, how it ended and the stop word it ended at."""
        text, finish = reply.text, reply.finish_reason
        if not self.honor_stop or not request.stop:
            return text, finish, None
        hits = [(text.find(s), s) for s in request.stop if s in text]
        if not hits:
            return text, finish, None
        at, word = min(hits)
        return (text[: at + len(word)] if self.include_stop else text[:at]), "stop", word

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        self.requests.append(request)
        if self._next >= len(self._replies):
            raise BackendError(
                f"scripted backend has no reply left for request {len(self.requests)} "
                f"(it was given {len(self._replies)})"
            )
        reply = self._replies[self._next]
        self._next += 1
        text, finish, word = self._cut(reply, request)
        size = max(1, reply.chunk_size)
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        usage = Usage(len(request.prompt), len(text))  # characters: a stand-in for token counts
        for piece in pieces[:-1]:
            yield CompletionChunk(piece)
        yield CompletionChunk(pieces[-1], finish, usage, word)
