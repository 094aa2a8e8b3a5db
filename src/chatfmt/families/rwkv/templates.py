"""RWKV World / G1: ``User: …\\n\\nAssistant: …\\n\\n``, as llama.cpp's ``rwkv-world`` template.

llama.cpp ships ``llama-cpp-rwkv-world.jinja`` for the RWKV-6/7 World and G1 models it
converts: the end of turn is ``\\n\\n`` (llama.cpp's EOT token 261) and BOS/EOS are token 0,
``<|rwkv_tokenizer_end_of_text|>``. There is no tool-call syntax; ``enable_thinking=True``
opens `` <think>`` in the generation prompt (the G1 reasoning models).

Sampling: temperature 1.0 with top-p 0.3, the RWKV chat defaults.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from .markers import RWKV_TOKENIZER_END_OF_TEXT

END_OF_TEXT = RWKV_TOKENIZER_END_OF_TEXT

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "llama-cpp-rwkv-world.jinja",
        history=EARLIER_REASONING_DROPPED,
        name="rwkv-world",
        aliases=("rwkv7-g1", "rwkv7-world", "rwkv6-world"),
        model_ids=(
            "fla-hub/rwkv7-191M-world",
            "fla-hub/rwkv7-0.4B-world",
            "fla-hub/rwkv7-1.5B-world",
            "fla-hub/rwkv7-0.1B-g1",
            "fla-hub/rwkv7-0.4B-g1",
            "fla-hub/rwkv7-2.9B-g1",
        ),
        reasoning_parser=ThinkParser,
        generation=GenerationConfig(
            stop_words=("\n\n", END_OF_TEXT), session_len=4096, temperature=1.0, top_p=0.3
        ),
        variables={"bos_token": END_OF_TEXT, "eos_token": END_OF_TEXT},
        description=(
            "RWKV World/G1 (llama.cpp's template): 'User: …\\n\\nAssistant: …\\n\\n', "
            "no tool calls, <think> reasoning with enable_thinking=True."
        ),
    ),
)
