"""Deprecated: the turn layer moved to :mod:`chatfmt.turn` (removed in the next release)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..template import Template
from ..turn import Delta, ParsedTurn, render_prompt

warnings.warn(
    "chatfmt.agent.turn moved to chatfmt.turn (prompt_for is now render_prompt)",
    DeprecationWarning,
    stacklevel=2,
)


def prompt_for(
    template: Template,
    history: list[dict[str, Any]],
    tools: Sequence[Any] | None,
    options: Mapping[str, Any],
    tokenizer: Any = None,
) -> tuple[str, tuple[int, ...] | None]:
    """Deprecated: :func:`chatfmt.turn.render_prompt`. The prompt for ``history`` and
    its ids (with a tokenizer); ``history`` is updated in place to what was rendered."""
    prompt = render_prompt(template, history, tools=tools, options=options, tokenizer=tokenizer)
    if prompt.messages is not history:
        history[:] = prompt.messages
    return prompt.text, prompt.ids


__all__ = ["Delta", "ParsedTurn", "prompt_for"]
