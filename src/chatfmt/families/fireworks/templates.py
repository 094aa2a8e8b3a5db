"""Fireworks FireFunction v2 (Llama 3 70B based): official Jinja template with its parser.

Calls follow the text as `` functools[{"name": …, "arguments": {…}}, …]``. The
official template reads the tool list from the variable ``functions`` (JSON text) and
the date from ``datetime``, not from ``tools``: ``tools=`` fills ``functions`` (the
tools as indented JSON, as Fireworks' serving stack passes them) unless ``functions=``
is given; ``datetime=`` is a template option (empty when not given).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...config import GenerationConfig
from ...errors import ValidationError
from ...jinja.packaged import PackagedTemplate
from ...jinja.trace import TurnInfo
from ...protocol import Conversation
from ...requests import RenderRequest
from ...segments import Segment
from ...template import RenderContext, Template
from .markers import BEGIN_OF_TEXT, END_OF_TEXT, EOT_ID
from .parser import FireFunctionV2Parser


def _functions(tools: Any) -> str:
    try:
        return json.dumps(list(tools), indent=2, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"not JSON-serializable ({exc})", field="tools") from None


#: The assistant header, which the official template writes after every conversation.
_ASSISTANT = "<|start_header_id|>assistant<|end_header_id|>\n\n"


class FireFunctionTemplate(PackagedTemplate):
    """The packaged FireFunction v2 template, its ``functions`` variable filled from ``tools``."""

    def turn_info(self, opts: Mapping[str, Any], merge: bool = False) -> TurnInfo:
        """The template writes the assistant header with or without ``add_generation_prompt``,
        so probing cannot find it; it is the generation prompt all the same."""
        return TurnInfo(_ASSISTANT, super().turn_info(opts, merge).end_of_turn)

    def _render(self, messages: Any, request: RenderRequest) -> str:
        if request.tools and "functions" not in request.options:
            functions = _functions(request.tools)
            request = RenderRequest.from_kwargs({"functions": functions}, request)
        return super()._render(messages, request)

    def _render_segments(
        self, messages: Any, tools: Any, ctx: RenderContext, sequence_start: bool
    ) -> tuple[Conversation, list[Segment]]:
        if tools and "functions" not in ctx.options:
            ctx.options = {**ctx.options, "functions": _functions(tools)}
        return super()._render_segments(messages, tools, ctx, sequence_start)


TEMPLATES: tuple[Template, ...] = (
    FireFunctionTemplate(
        "fireworks-ai-llama-3-firefunction-v2.jinja",
        name="firefunction-v2",
        model_ids=("fireworks-ai/llama-3-firefunction-v2",),
        tool_parser=FireFunctionV2Parser,
        generation=GenerationConfig(
            stop_words=(EOT_ID, END_OF_TEXT),
            temperature=0.6,
            top_p=0.9,
            session_len=8192,
        ),
        variables={"bos_token": BEGIN_OF_TEXT, "eos_token": EOT_ID},
        description="FireFunction v2: Llama 3 turns, ' functools[…]' calls after the text",
    ),
)
