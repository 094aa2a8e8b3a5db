"""One model turn, the layer below the agent loop and the gateway.

:func:`render_prompt` renders a conversation — and, with a chatfmt tokenizer, encodes it:
injection-safe ids, the text and the ids from one encoding — and is the one place where
reasoning a format refuses to show again is left out. :class:`ParsedTurn` streams a
completion from a backend through the template's :class:`~chatfmt.parsing.StreamParser`
into deltas and a finish reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .backends.base import Backend, CompletionChunk, CompletionRequest, Usage
from .errors import UnsupportedFeatureError
from .parsing import Delta, StreamParser
from .protocol import Conversation, Message
from .template import Template

if TYPE_CHECKING:
    from .tokens import Encoding

#: What a turn renders: a validated :class:`~chatfmt.protocol.Conversation` (its tools
#: inside it), or message dicts as a caller keeps them (an agent's growing history; the
#: Jinja backend then sees their raw shape). A :class:`Prompt` holds the same type.
Messages = TypeVar("Messages", Conversation, list[dict[str, Any]])


@dataclass
class Prompt(Generic[Messages]):
    """A rendered conversation: the prompt text (generation prompt included, when asked)
    and, when a tokenizer made them, its ids and :class:`~chatfmt.tokens.Encoding`.

    ``messages`` is what was rendered: the input, or a copy of it without the reasoning
    the format refused to show again (same type as the input).
    """

    text: str
    messages: Messages
    ids: tuple[int, ...] | None = None
    encoding: Encoding | None = None


def render_prompt(
    template: Template,
    messages: Messages,
    *,
    tools: Sequence[Any] | None = None,
    options: Mapping[str, Any] | None = None,
    tokenizer: Any = None,
    add_generation_prompt: bool = True,
    strict_history: bool = False,
) -> Prompt[Messages]:
    """Render ``messages`` (with ``tools``, unless they are a Conversation's) for ``template``.

    With a chatfmt ``tokenizer`` the prompt is encoded, segment by segment (control tokens
    from markup only). Some formats never show the model its own reasoning again (QwQ, the
    R1 distills, DeepSeek V3.1 refuse ``reasoning_content`` after the last user message
    rather than drop it silently): for a prompt that asks for the next reply, such a
    message is rendered without its reasoning. Without a generation prompt (a finished
    conversation, e.g. training data) the refusal stands. ``strict_history=True``: only
    the official template's bytes, or an error (see docs/rendering.md).
    """
    options = options or {}
    tools = tools or None
    while True:
        try:
            if tokenizer is None:
                text = template.render(
                    messages,
                    tools=tools,
                    add_generation_prompt=add_generation_prompt,
                    strict_history=strict_history,
                    **options,
                )
                return Prompt(text, messages)
            from .tokens import encode

            enc = encode(
                messages,
                template,
                tokenizer,
                tools=tools,
                add_generation_prompt=add_generation_prompt,
                strict_history=strict_history,
                **options,
            )
            return Prompt(enc.text, messages, tuple(enc.input_ids), enc)
        except UnsupportedFeatureError as exc:
            stripped = _without_refused_reasoning(messages, exc) if add_generation_prompt else None
            if stripped is None:
                raise
            messages = stripped


def _without_refused_reasoning(messages: Messages, exc: UnsupportedFeatureError) -> Messages | None:
    """``messages`` without the reasoning ``exc`` refuses (``None``: not such a refusal)."""
    i = exc.index
    if exc.field != "reasoning_content" or i is None or not 0 <= i < len(messages):
        return None
    if isinstance(messages, Conversation):
        msgs: list[Message] = list(messages.messages)
        if msgs[i].reasoning_content is None:
            return None
        msgs[i] = dataclasses.replace(msgs[i], reasoning_content=None)
        return Conversation(tuple(msgs), messages.tools)
    if "reasoning_content" not in messages[i]:
        return None
    out = list(messages)
    out[i] = {k: v for k, v in messages[i].items() if k != "reasoning_content"}
    return out


class ParsedTurn:
    """A completion streamed from ``backend`` and parsed by ``parser`` as it arrives.

    Iterate :meth:`deltas` for lists of typed deltas (the last list comes from
    ``parser.finish``). ``prefill`` is text the prompt already holds for the model's
    turn (it was sent as the end of the prompt): it is parsed before the backend's
    output. Afterwards ``raw`` is the output as written (prefill included), ``usage``
    the backend's usage, ``truncated`` whether it stopped at its token limit, ``stop_word``
    the stop sequence it stopped at (when the backend says) and ``error`` the failure that
    ended the stream, if one did. ``await open()`` first to send the request and wait for
    the backend's first chunk (its failures are raised there); set ``kept`` to a list to
    collect every delta. The backend stream is closed when the iteration ends, early or
    not (or by :meth:`aclose`).
    """

    def __init__(
        self,
        backend: Backend,
        request: CompletionRequest,
        parser: StreamParser,
        *,
        prefill: str = "",
    ) -> None:
        self.backend = backend
        self.request = request
        self.parser = parser
        self.prefill = prefill
        self.raw: list[str] = []
        self.usage: Usage | None = None
        self.truncated = False
        self.stop_word: str | None = None
        self.error: BaseException | None = None
        #: Every delta so far, when set to a list (else ``None``: not kept).
        self.kept: list[Delta] | None = None
        self._stream: AsyncIterator[CompletionChunk] | None = None
        self._first: CompletionChunk | None = None

    @classmethod
    def for_template(
        cls,
        backend: Backend,
        request: CompletionRequest,
        template: Template,
        *,
        tools: Sequence[Any] | None = None,
        options: Mapping[str, Any] | None = None,
        prefill: str = "",
    ) -> ParsedTurn:
        """A turn parsed by ``template``'s stream parser (knowing ``tools``, with ``options``)."""
        parser = StreamParser(template, tools=tools or None, **(options or {}))
        return cls(backend, request, parser, prefill=prefill)

    async def open(self) -> None:
        """Send the request and wait for the backend's first chunk (its failures, and a
        cancellation, close the stream and are raised here)."""
        stream = self._stream = self.backend.stream(self.request)
        try:
            self._first = first = await stream.__anext__()
            if first.usage is not None:  # e.g. the prompt's count, sent with the first chunk
                self.usage = first.usage
        except StopAsyncIteration:
            pass
        except BaseException as exc:
            self.error = exc
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Close the backend stream (idempotent)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()  # type: ignore[attr-defined]

    def _take(self, chunk: CompletionChunk) -> list[Delta]:
        self.raw.append(chunk.text)
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.stop is not None:
            self.stop_word = chunk.stop
        if chunk.finish_reason == "length":
            self.truncated = True
        batch = self.parser.feed(chunk.text)
        if self.kept is not None:
            self.kept.extend(batch)
        return batch

    async def deltas(self) -> AsyncGenerator[list[Delta], None]:
        """Deltas per backend chunk, then the closing deltas."""
        if self.prefill:
            self.raw.append(self.prefill)
            batch = self.parser.feed(self.prefill)
            if self.kept is not None:
                self.kept.extend(batch)
            yield batch
        stream = self._stream
        if stream is None:
            stream = self._stream = self.backend.stream(self.request)
        first, self._first = self._first, None
        take = self._take
        # A backend stream is an async generator: closed here, so that leaving early (a
        # client gone, a cancelled task) closes its connection at once.
        try:
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
                if first is not None:
                    yield take(first)
                async for chunk in stream:
                    yield take(chunk)
        except Exception as exc:
            self.error = exc
            raise
        batch = self.parser.finish(truncated=self.truncated)
        if self.kept is not None:
            self.kept.extend(batch)
        yield batch

    @property
    def text(self) -> str:
        """The output so far as written (prefill included)."""
        return "".join(self.raw)
