"""Generation settings bundled with each template (LMDeploy's design)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

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
        for key in ("stop_words", "tool_stop_words"):
            if key in changes and changes[key] is not None:
                changes[key] = tuple(changes[key])
        return replace(self, **changes)
