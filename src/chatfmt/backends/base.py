"""The backend protocol: a prompt and stop words in, text chunks, a finish reason and usage out.

Every engine (an OpenAI-compatible ``/v1/completions`` server, an embedded model, a
scripted replay for tests) implements :class:`Backend`. The agent and the gateway only
ever see this interface.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UnsupportedFeatureError, ValidationError

if TYPE_CHECKING:
    from ..constraints import Constraint
    from ..template import Template

#: Why generation ended: a stop word or end of sequence (``stop``) or the token limit (``length``).
FinishReason = Literal["stop", "length"]


#: Numeric request fields: (integer only, lowest allowed value or None).
_BOUNDS: dict[str, tuple[bool, float | None]] = {
    "max_tokens": (True, 1),
    "top_k": (True, 0),
    "seed": (True, None),
    "temperature": (False, 0.0),
    "top_p": (False, 0.0),
    "repetition_penalty": (False, 0.0),
}


@dataclass(frozen=True)
class CompletionRequest:
    """One raw completion: the prompt text, stop words, limits and sampling settings.

    ``prompt_token_ids`` (optional) are the prompt's ids from chatfmt's injection-safe
    encoding; backends that accept ids send them instead of having the engine tokenize
    ``prompt`` (which would turn a user's ``<|im_end|>`` into a control token).

    ``None`` for a sampling field means "the backend's default". Build one from a
    template's bundled defaults with :meth:`for_template`.

    ``constraint`` (optional, from :func:`chatfmt.constraints.compile_constraint`) limits
    what the model may write after ``prompt`` (which already ends with the constraint's
    ``prefill``): each backend sends it in its engine's dialect, or cannot (then the reply
    is only validated). See ``docs/gateway.md`` (constrained decoding).
    """

    prompt: str
    stop: tuple[str, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    repetition_penalty: float | None = None
    prompt_token_ids: tuple[int, ...] | None = None
    constraint: Constraint | None = None
    #: Ask for the prompt's token count with the stream's first chunk (its ``usage``), where
    #: the engine can send it (see :meth:`Backend.counts_prompt_in_stream`).
    prompt_count_first: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, str):
            raise ValidationError(
                f"must be a str, got {type(self.prompt).__name__}", field="prompt"
            )
        if isinstance(self.stop, str) or not all(isinstance(s, str) for s in self.stop):
            raise ValidationError("must be a list of strings", field="stop")
        object.__setattr__(self, "stop", tuple(dict.fromkeys(s for s in self.stop if s)))
        if self.prompt_token_ids is not None:
            ids = tuple(self.prompt_token_ids)
            # C-level passes (a prompt has thousands of ids): each an int (not a bool), ≥ 0
            if ids and (not set(map(type, ids)) <= _INT or min(ids) < 0):
                raise ValidationError("must be a list of token ids", field="prompt_token_ids")
            object.__setattr__(self, "prompt_token_ids", ids)
        for name, (integer, low) in _BOUNDS.items():
            value = getattr(self, name)
            if value is None:
                continue
            wrong = not isinstance(value, int) if integer else not isinstance(value, (int, float))
            if isinstance(value, bool) or wrong:
                kind = "an integer" if integer else "a number"
                raise ValidationError(f"must be {kind}, got {value!r}", field=name)
            if low is not None and value < low:
                raise ValidationError(f"must be at least {low}, got {value!r}", field=name)
        if self.top_p is not None and self.top_p > 1:
            raise ValidationError(f"must be at most 1, got {self.top_p!r}", field="top_p")

    @classmethod
    def for_template(cls, template: Template, prompt: str, **overrides: Any) -> CompletionRequest:
        """A request with the template's stop words (end of turn and tool calls) and sampling defaults.

        ``overrides`` replace any field (``stop=[...]`` replaces the stop words).
        """
        gc = template.generation_config
        defaults: dict[str, Any] = {
            "stop": gc.all_stop_words,
            "temperature": gc.temperature,
            "top_p": gc.top_p,
            "top_k": gc.top_k,
            "repetition_penalty": gc.repetition_penalty,
        }
        known = _field_names(cls)
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValidationError(
                f"unknown request field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        defaults.update(overrides)
        return cls(prompt=prompt, **defaults)

    def with_(self, **changes: Any) -> CompletionRequest:
        """A copy with ``changes`` (validated like the constructor)."""
        return replace(self, **changes)


#: The one type a token id may have (``bool`` is a subclass of ``int``, not a token id).
_INT = {int}

#: The field names of each dataclass :func:`_field_names` was asked about.
_FIELD_NAMES: dict[Any, frozenset[str]] = {}


def _field_names(cls: Any) -> frozenset[str]:
    """The field names of a dataclass (looked up once per class, not per request)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in fields(cls))
    return names


@dataclass(frozen=True)
class Usage:
    """Token counts, when the backend reports them."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: Prompt tokens the engine took from its prefix cache (``prompt_tokens_details.cached_tokens``).
    cached_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class CompletionChunk:
    """A piece of generated text. The last chunk of a stream carries ``finish_reason`` (and
    usage, and ``stop``: the stop sequence generation ended at, when the engine says).
    ``events`` is how many of the engine's streamed pieces (≈ tokens) the text joins: a
    backend hands everything one network read delivered as one chunk."""

    text: str
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    stop: str | None = None
    events: int = 1


@dataclass(frozen=True)
class CompletionResult:
    """A whole completion."""

    text: str
    finish_reason: FinishReason
    usage: Usage | None = None


class Backend(abc.ABC):
    """A raw text-completion engine.

    Subclasses implement :meth:`stream`; :meth:`complete` collects it. The stream
    ends with exactly one chunk whose ``finish_reason`` is set (its text may be empty).
    A backend may or may not include the stop word it stopped at in the text: parse
    the result with :mod:`chatfmt.parsing`, which accepts both.
    """

    @abc.abstractmethod
    def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        """Generate, yielding text chunks as they arrive."""

    async def complete(self, request: CompletionRequest) -> CompletionResult:
        """Generate and return the whole text."""
        parts: list[str] = []
        finish: FinishReason = "stop"
        usage: Usage | None = None
        async for chunk in self.stream(request):
            parts.append(chunk.text)
            if chunk.finish_reason is not None:
                finish = chunk.finish_reason
            if chunk.usage is not None:
                usage = chunk.usage
        return CompletionResult("".join(parts), finish, usage)

    async def counts_prompt_in_stream(self) -> bool:
        """Whether a stream of a request with ``prompt_count_first`` sends the prompt's
        token count with its first chunk (no by default)."""
        return False

    async def tokenize(self, text: str) -> list[int]:
        """The engine's token ids for ``text`` (its tokenize endpoint, or its own tokenizer).

        Raises :class:`~chatfmt.errors.UnsupportedFeatureError` where the engine cannot
        tell (the default).
        """
        raise UnsupportedFeatureError(f"{type(self).__name__} cannot tokenize")

    async def detokenize(self, ids: Sequence[int]) -> str:
        """The engine's text of token ``ids`` (the inverse of :meth:`tokenize`).

        Raises :class:`~chatfmt.errors.UnsupportedFeatureError` where the engine cannot
        tell (the default).
        """
        raise UnsupportedFeatureError(f"{type(self).__name__} cannot detokenize")

    async def ping(self) -> None:  # noqa: B027  (optional hook: nothing to check by default)
        """Raise a :class:`~chatfmt.errors.BackendError` if the engine does not answer (a
        cheap request, for health probes; by default there is nothing to check)."""

    async def aclose(self) -> None:  # noqa: B027  (optional hook: nothing to release by default)
        """Release the connections held by the backend; it stays usable (a later request
        opens new ones). The blocking agent calls it when its private event loop ends."""

    async def __aenter__(self) -> Backend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def usage_from(data: Mapping[str, Any] | None) -> Usage | None:
    """A :class:`Usage` from an OpenAI ``usage`` object (``None`` if absent or malformed)."""
    if not isinstance(data, Mapping):
        return None
    prompt, completion = data.get("prompt_tokens"), data.get("completion_tokens")
    details = data.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(
        prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None,
        cached if isinstance(cached, int) else None,
    )
