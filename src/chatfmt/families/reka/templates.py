"""Reka Edge: ``human: … <sep>assistant: …`` turns, Hermes-style tool calls, ``<think>`` reasoning.

The official template (``Reka-Edge.jinja``) writes tool calls as
``<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`` and, with
``enable_thinking=True``, opens ``<think>\\n`` in the generation prompt. A turn ends
with ``<sep>`` (Reka's model card: stop on the string ``<sep>`` or ``<|endoftext|>``).

Sampling: chatfmt's defaults (no recommendation published in the sources consulted);
``session_len`` is the model's context length.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from ..chatml.markers import ENDOFTEXT
from ..hermes.parser import HermesParser
from .markers import SEP

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "Reka-Edge.jinja",
        history=EARLIER_REASONING_DROPPED,
        name="reka-edge",
        aliases=("reka-edge-2603",),
        model_ids=("RekaAI/reka-edge-2603",),
        tool_parser=HermesParser,
        reasoning_parser=ThinkParser,
        generation=GenerationConfig(stop_words=(SEP, ENDOFTEXT), session_len=32768),
        variables={"bos_token": "", "eos_token": ENDOFTEXT},
        description=(
            "Reka Edge (official Jinja): 'human: …<sep>assistant: …' turns, "
            "<tool_call>{json}</tool_call> calls, <think> reasoning with enable_thinking=True."
        ),
    ),
)
