"""ServiceNow Apriel 1.5 / 1.6 Thinker: their official Jinja templates with the ``apriel`` parsers.

Both write reasoning before ``[BEGIN FINAL RESPONSE]`` and calls as
``<tool_calls>[{"name": …, "arguments": …}]</tool_calls>``; the turn ends at ``<|end|>``.
Apriel 1.6's generation prompt opens the reasoning (``Here are my reasoning steps:``).
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import BOS, END, EOS
from .parser import AprielParser, AprielReasoningParser

_GENERATION = GenerationConfig(
    session_len=131072, stop_words=(END, EOS), top_p=1.0, temperature=0.6
)
_VARIABLES = {"bos_token": BOS, "eos_token": EOS}

APRIEL_15 = PackagedTemplate(
    "unsloth-Apriel-1.5.jinja",
    name="apriel-1.5",
    aliases=("apriel1.5",),
    model_ids=("ServiceNow-AI/Apriel-1.5-15b-Thinker", "unsloth/Apriel-1.5-15b-Thinker"),
    tool_parser=AprielParser,
    reasoning_parser=AprielReasoningParser,
    generation=_GENERATION,
    variables=_VARIABLES,
    description="Apriel 1.5 Thinker (Unsloth's template): <|system|>/<|user|>/<|assistant|>, "
    "[BEGIN FINAL RESPONSE], <tool_calls>[…]</tool_calls>.",
)

APRIEL_16 = PackagedTemplate(
    "Apriel-1.6-15b-Thinker-fixed.jinja",
    history=EARLIER_REASONING_DROPPED,
    name="apriel-1.6",
    aliases=("apriel1.6",),
    model_ids=("ServiceNow-AI/Apriel-1.6-15b-Thinker",),
    tool_parser=AprielParser,
    reasoning_parser=AprielReasoningParser,
    generation=_GENERATION,
    variables=_VARIABLES,
    description="Apriel 1.6 Thinker: <|begin_user|>/<|begin_assistant|>, reasoning prefilled, "
    "[BEGIN FINAL RESPONSE], <tool_calls>[…]</tool_calls>.",
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (APRIEL_15, APRIEL_16)
