"""One model turn over a completion backend, shared by the agent loop and the gateway.

render the history (and, with a tokenizer, encode it: injection-safe ids) → stream the
completion → feed the template's :class:`~chatfmt.parsing.StreamParser` → deltas and a
finish reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from ..backends.base import Backend, CompletionRequest, Usage
from ..errors import UnsupportedFeatureError
from ..parsing import Delta, StreamParser
from ..template import Template


def prompt_for(
    template: Template,
    history: list[dict[str, Any]],
    tools: Sequence[Any] | None,
    options: Mapping[str, Any],
    tokenizer: Any = None,
) -> tuple[str, tuple[int, ...] | None]:
    """The prompt for ``history`` (generation prompt included), and with a chatfmt
    ``tokenizer`` its injection-safe ids — the text and the ids from one encoding.

    Some formats never show the model its own reasoning again (QwQ, the R1 distills,
    DeepSeek V3.1 refuse ``reasoning_content`` after the last user message rather than
    drop it silently): such a message goes back without its reasoning. ``history`` is
    updated in place to what was rendered.
    """
    tools = tools or None
    while True:
        try:
            if tokenizer is None:
                return template.render(history, tools=tools, **options), None
            from ..tokens import encode

            enc = encode(
                history, template, tokenizer, tools=tools, add_generation_prompt=True, **options
            )
            return enc.text, tuple(enc.input_ids)
        except UnsupportedFeatureError as exc:
            i = exc.index
            if exc.field != "reasoning_content" or i is None or i >= len(history):
                raise
            if "reasoning_content" not in history[i]:
                raise
            history[i] = {k: v for k, v in history[i].items() if k != "reasoning_content"}


class ParsedTurn:
    """A completion streamed from ``backend`` and parsed by ``parser`` as it arrives.

    Iterate :meth:`deltas` for lists of typed deltas (the last list comes from
    ``parser.finish``). ``prefill`` is text the prompt already holds for the model's
    turn (it was sent as the end of the prompt): it is parsed before the backend's
    output. Afterwards ``raw`` is the output as written (prefill included), ``usage``
    the backend's usage and ``truncated`` whether it stopped at its token limit.
    The backend stream is closed when the iteration ends, early or not.
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

    async def deltas(self) -> AsyncGenerator[list[Delta], None]:
        """Deltas per backend chunk, then the closing deltas."""
        parser = self.parser
        if self.prefill:
            self.raw.append(self.prefill)
            yield parser.feed(self.prefill)
        stream = self.backend.stream(self.request)
        # A backend stream is an async generator: closed here, so that leaving early (a
        # client gone, a cancelled task) closes its connection at once.
        async with contextlib.aclosing(stream):  # type: ignore[type-var]
            async for chunk in stream:
                self.raw.append(chunk.text)
                if chunk.usage is not None:
                    self.usage = chunk.usage
                self.truncated = self.truncated or chunk.finish_reason == "length"
                yield parser.feed(chunk.text)
        yield parser.finish(truncated=self.truncated)

    @property
    def text(self) -> str:
        """The output so far as written (prefill included)."""
        return "".join(self.raw)
