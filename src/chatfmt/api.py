"""The stable top-level API: ``render``, ``render_segments``, ``get_template``, ``list_templates``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .registry import REGISTRY
from .requests import RenderRequest
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
    request: RenderRequest | None = None,
    **kwargs: Any,
) -> str:
    """Render OpenAI-style ``messages`` into the exact prompt text of ``template``.

    Keywords are the fields of :class:`RenderRequest` (``tools``,
    ``add_generation_prompt``, ``continue_final_message``, ``sequence_start``,
    ``now``); any other keyword is a template option (e.g. ``enable_thinking``).
    ``request=`` passes a prepared request (keywords given too change it for this call).
    """
    return REGISTRY.get(template).render(messages, request=request, **kwargs)


def render_segments(
    messages: Any,
    template: str | Path | Template,
    *,
    request: RenderRequest | None = None,
    **kwargs: Any,
) -> list[Segment]:
    """Like :func:`render`, but return the segments (text, kind, message, trained)."""
    return REGISTRY.get(template).segments(messages, request=request, **kwargs)
