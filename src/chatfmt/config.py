"""Generation settings bundled with each template (LMDeploy's design)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from .errors import TemplateError

Capability = Literal["chat", "completion"]


@dataclass(frozen=True)
class GenerationConfig:
    """Sampling defaults and stop words that belong to a model's chat format.

    ``stop_words`` end a turn; ``tool_stop_words`` end a tool call (an engine that
    runs tools stops there too, but they are not end-of-turn markers).
    """

    session_len: int = 2048
    stop_words: tuple[str, ...] = ()
    tool_stop_words: tuple[str, ...] = ()
    top_p: float = 0.8
    top_k: int | None = None
    temperature: float = 0.8
    repetition_penalty: float = 1.0
    capability: Capability = "chat"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in ("stop_words", "tool_stop_words"):
            value = getattr(self, key)
            object.__setattr__(self, key, string_tuple(value, f"generation.{key}"))
        _check_number(self.session_len, "session_len", integer=True)
        if self.top_k is not None:
            _check_number(self.top_k, "top_k", integer=True)
        for key in ("top_p", "temperature", "repetition_penalty"):
            _check_number(getattr(self, key), key)
        if self.capability not in ("chat", "completion"):
            raise TemplateError(
                f"generation.capability must be 'chat' or 'completion', got {self.capability!r}"
            )
        if not isinstance(self.extra, dict):
            raise TemplateError("generation.extra must be a table/object")

    @property
    def all_stop_words(self) -> tuple[str, ...]:
        """End-of-turn and tool-call stop words together, without duplicates."""
        return tuple(dict.fromkeys(self.stop_words + self.tool_stop_words))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop_words"] = list(self.stop_words)
        d["tool_stop_words"] = list(self.tool_stop_words)
        return d

    def replace(self, **changes: Any) -> GenerationConfig:
        """A copy with ``changes`` (checked like the constructor; a string is not a word list)."""
        return replace(self, **changes)


def string_tuple(value: Any, key: str) -> tuple[str, ...]:
    """``value`` (a list or tuple of strings) as a tuple; anything else raises TemplateError."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TemplateError(f"{key} must be a list of strings, got {type(value).__name__}")
    for item in value:
        if not isinstance(item, str):
            raise TemplateError(
                f"{key} must be a list of strings, got an item of type {type(item).__name__}"
            )
    return value if type(value) is tuple else tuple(value)


def _check_number(value: Any, key: str, *, integer: bool = False) -> None:
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        expected = "an integer" if integer else "a number"
        raise TemplateError(f"generation.{key} must be {expected}, got {value!r}")
