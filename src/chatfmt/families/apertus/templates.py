"""Swiss AI Apertus: the official Jinja template with the ``apertus`` parsers.

Calls are ``<|tools_prefix|>[{"name": {arguments}}]<|tools_suffix|>``, reasoning
``<|inner_prefix|>…<|inner_suffix|>``; the assistant turn ends at ``<|assistant_end|>``.
Sampling from the model card (temperature 0.8, top_p 0.9); 65,536-token context.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import ASSISTANT_END, BOS
from .parser import ApertusParser, ApertusThinkParser

APERTUS = PackagedTemplate(
    "Apertus-8B-Instruct.jinja",
    name="apertus",
    aliases=("apertus-instruct",),
    model_ids=("swiss-ai/Apertus-8B-Instruct-2509", "swiss-ai/Apertus-70B-Instruct-2509"),
    tool_parser=ApertusParser,
    reasoning_parser=ApertusThinkParser,
    generation=GenerationConfig(
        session_len=65536, stop_words=(ASSISTANT_END,), top_p=0.9, temperature=0.8
    ),
    variables={"bos_token": BOS, "eos_token": ASSISTANT_END},
    description="Apertus: <|system_start|>/<|developer_start|>/<|user_start|>/<|assistant_start|>, "
    "<|tools_prefix|>[{name: args}]<|tools_suffix|>, <|inner_prefix|> reasoning.",
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (APERTUS,)
