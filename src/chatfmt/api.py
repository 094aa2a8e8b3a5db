"""The stable top-level API: ``render``, ``get_template``, ``list_templates``."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .registry import REGISTRY
from .segments import Segment
from .template import Template


def get_template(template: str | Path | Template) -> Template:
    """Look up a template by name, alias, Hugging Face model id, local path, file or source."""
    return REGISTRY.get(template)


def list_templates() -> list[Template]:
    """All registered templates, sorted by name."""
    return list(REGISTRY)


def render(
    messages: Any,
    template: str | Path | Template,
    *,
    tools: Sequence[Any] | None = None,
    add_generation_prompt: bool = True,
    continue_final_message: bool = False,
    sequence_start: bool = True,
    now: _dt.date | _dt.datetime | str | None = None,
    **options: Any,
) -> str:
    """Render OpenAI-style ``messages`` into the exact prompt text of ``template``.

    ``options`` are the template's own variables (e.g. ``enable_thinking``);
    ``now`` fixes the date for templates that print one.
    """
    return REGISTRY.get(template).render(
        messages,
        tools=tools,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
        sequence_start=sequence_start,
        now=now,
        **options,
    )


def render_segments(
    messages: Any,
    template: str | Path | Template,
    *,
    tools: Sequence[Any] | None = None,
    add_generation_prompt: bool = True,
    continue_final_message: bool = False,
    sequence_start: bool = True,
    now: _dt.date | _dt.datetime | str | None = None,
    **options: Any,
) -> list[Segment]:
    """Like :func:`render`, but return the segments (text, kind, message, trained)."""
    return REGISTRY.get(template).segments(
        messages,
        tools=tools,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
        sequence_start=sequence_start,
        now=now,
        **options,
    )
