"""Tool calls as an xgrammar structural tag, for vLLM and SGLang.

Follows the structural-tag shape of xgrammar 0.2.8 (``xgrammar/structural_tag.py``:
``{"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": […], "tags":
[{"type": "tag", "begin": …, "content": {"type": "json_schema", "json_schema": …}, "end": …}],
"at_least_one": …, "stop_after_first": …}}``), which vLLM (``response_format`` /
``structured_outputs.structural_tag``, docs.vllm.ai "Structured Outputs", v0.12+) and SGLang
(``response_format`` ``structural_tag``) pass to xgrammar. :func:`legacy_structural_tag` gives
the older form (``{"type": "structural_tag", "structures": [{"begin", "schema", "end"}],
"triggers": […]}``) that earlier vLLM releases read.

Only formats whose arguments are one JSON object are expressible this way; for the others
(XML parameters, pythonic calls) the tag is ``None`` and the grammar (``ebnf``) is the way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..parsing.derived_format import ToolCallFormat
from .calls import JSON_ARGUMENTS, Tool


def structural_tag(
    fmt: ToolCallFormat,
    tools: Sequence[Tool],
    parts: Any,
    trigger: str | None,
    *,
    at_least_one: bool,
    parallel: bool,
) -> Mapping[str, Any] | None:
    """The structural tag for calls of ``tools`` (``parts``: the template's
    :class:`~chatfmt.gateway.tool_choice.CallParts`), or ``None`` when not expressible."""
    if fmt.encoding not in JSON_ARGUMENTS or parts is None or not trigger:
        return None
    if not parts.follows_prompt:  # the rendered call is not what the model writes (Command R)
        return None
    if fmt.id_end and not parts.name_close.rstrip().endswith(fmt.id_end):
        return None  # a call id the model writes between name and arguments
    at = parts.opening.find(trigger)
    if at < 0:
        return None
    end = _end(fmt, parts.after_args)
    tags = [
        {
            "type": "tag",
            "begin": parts.opening[at:] + tool.name + parts.name_close,
            "content": {"type": "json_schema", "json_schema": dict(tool.parameters)},
            "end": end,
        }
        for tool in tools
    ]
    return {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": [trigger],
            "tags": tags,
            "at_least_one": at_least_one,
            "stop_after_first": not parallel,
        },
    }


def _end(fmt: ToolCallFormat, after: str) -> str:
    """What closes one call after its arguments, as the template writes it."""
    cut = max(
        (after.find(m) + len(m) for m in (fmt.call_end, fmt.calls_end) if m and m in after),
        default=-1,
    )
    if cut >= 0:
        return after[:cut]
    if fmt.encoding == "json_list":
        return "}]"
    if fmt.encoding in ("json_call", "bare_json_call"):
        return "}"
    return ""


def legacy_structural_tag(tag: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``tag`` in the older ``structures``/``triggers`` form (``None`` when it does not fit)."""
    fmt = tag.get("format") or {}
    if fmt.get("type") != "triggered_tags":
        return None
    return {
        "type": "structural_tag",
        "structures": [
            {"begin": t["begin"], "schema": t["content"]["json_schema"], "end": t["end"]}
            for t in fmt["tags"]
        ],
        "triggers": list(fmt["triggers"]),
    }
