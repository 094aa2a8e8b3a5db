"""A template's thinking switch: a reasoning wish (on/off, effort) as the template's options.

APIs say "think" in their own terms — OpenAI's ``reasoning.effort`` / ``reasoning_effort``,
Anthropic's ``thinking: {"type": "enabled", "budget_tokens": N}`` — and templates each have
their own option for it (``enable_thinking`` for Qwen3, GLM-4.5, SmolLM3; ``thinking`` for
DeepSeek V3.1 and Granite 3.3; ``reasoning_effort`` for gpt-oss). :func:`thinking_options`
maps one to the other; a template without a switch gets no option (it thinks, or not, as
it always does).
"""

from __future__ import annotations

from typing import Any, Literal

#: Reasoning effort as OpenAI names it.
Effort = Literal["minimal", "low", "medium", "high"]

#: The boolean switches templates use, in the order they are looked for.
_SWITCHES = ("enable_thinking", "thinking")
#: gpt-oss knows three efforts; OpenAI's ``minimal`` is its lowest.
_EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


def thinking_options(
    template: Any, *, enabled: bool | None = None, effort: Effort | None = None
) -> dict[str, Any]:
    """The template options that switch thinking on or off (``enabled``) or set its
    ``effort`` (which implies ``enabled``, except ``minimal`` where a template can only
    switch: then thinking is off). ``{}`` when nothing is asked or the template has no
    switch."""
    if enabled is None and effort is None:
        return {}
    options = getattr(template, "default_options", {}) or {}
    if "reasoning_effort" in options:
        if effort is not None:
            return {"reasoning_effort": _EFFORTS[effort]}
        return {"reasoning_effort": "medium" if enabled else "low"}
    on = effort != "minimal" if effort is not None else bool(enabled)
    for switch in _SWITCHES:
        if switch in options:
            return {switch: on}
    return {}
