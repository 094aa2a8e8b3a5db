"""SpeakLeash Bielik v3: ChatML with Hermes-style tool calls and ``<think>`` reasoning.

The official template (``Bielik-11B-v3.0-Instruct.jinja``) writes ``{{ bos_token }}``
first, tool calls as ``<tool_call>\\n{json}\\n</tool_call>``, tool results as user turns
starting with ``<|function_output|>``, and opens ``<think>\\n`` in the generation prompt
when ``enable_thinking`` is set.

Sampling: chatfmt's defaults (no recommendation published in the sources consulted);
``session_len`` is the model's context length.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from ..chatml.markers import IM_END
from ..hermes.parser import HermesParser
from .markers import BOS, EOS

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "Bielik-11B-v3.0-Instruct.jinja",
        name="bielik-v3",
        aliases=("bielik-11b-v3", "bielik-11b-v3.0-instruct"),
        model_ids=("speakleash/Bielik-11B-v3.0-Instruct",),
        tool_parser=HermesParser,
        reasoning_parser=ThinkParser,
        generation=GenerationConfig(stop_words=(IM_END, EOS), session_len=32768),
        variables={"bos_token": BOS, "eos_token": IM_END},
        description=(
            "Bielik 11B v3.0 (official Jinja): ChatML with <s>, <tool_call>{json}</tool_call> "
            "calls, <think> reasoning with enable_thinking."
        ),
    ),
)
