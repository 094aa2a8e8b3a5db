"""inclusionAI Ling 3.0 (Bailing V3): ``<role>…</role>`` turns, GLM-4.5-style tool calls.

The official template (``inclusionai-ling-3.0-flash.jinja``) closes every turn with
``<|role_end|>``, writes tool calls as
``<tool_call>name\\n<arg_key>k</arg_key>\\n<arg_value>v</arg_value>\\n</tool_call>``
(parsed by ``glm45``) and opens ``\\n<think>`` in the generation prompt unless thinking is
off (``enable_thinking=False`` / ``thinking_option='off'`` prefill an empty block).

Sampling: chatfmt's defaults (no recommendation published in the sources consulted);
``session_len`` is the model's context length.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from ..chatml.markers import ENDOFTEXT
from ..glm.parser import GLM45Parser
from .markers import ROLE_END

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "inclusionai-ling-3.0-flash.jinja",
        name="ling-3.0",
        aliases=("ling-3.0-flash", "bailing-v3"),
        model_ids=("inclusionAI/Ling-3.0-flash", "inclusionAI/Ling-3.0-flash-fp4"),
        tool_parser=GLM45Parser,
        reasoning_parser=ThinkParser,
        generation=GenerationConfig(stop_words=(ROLE_END, ENDOFTEXT), session_len=262144),
        variables={"bos_token": "", "eos_token": ENDOFTEXT},
        description=(
            "Ling 3.0 flash (official Jinja): <role>HUMAN</role>…<|role_end|> turns, "
            "<tool_call>name<arg_key>…</tool_call> calls, <think> reasoning (on by default)."
        ),
    ),
)
