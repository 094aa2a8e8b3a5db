"""Fireworks FireFunction v2 (Llama 3 70B based): official Jinja template with its parser.

Calls follow the text as `` functools[{"name": …, "arguments": {…}}, …]``. The
template reads the tool list from the variable ``functions`` (JSON text) and the
date from ``datetime``, not from ``tools``.
"""

from __future__ import annotations

from ..config import GenerationConfig
from ..jinja.packaged import PackagedTemplate
from ..template import Template

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "fireworks-ai-llama-3-firefunction-v2.jinja",
        name="firefunction-v2",
        model_ids=("fireworks-ai/llama-3-firefunction-v2",),
        tool_parser="firefunction_v2",
        generation=GenerationConfig(
            stop_words=("<|eot_id|>", "<|end_of_text|>"),
            temperature=0.6,
            top_p=0.9,
            session_len=8192,
        ),
        variables={"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
        description="FireFunction v2: Llama 3 turns, ' functools[…]' calls after the text",
    ),
)
