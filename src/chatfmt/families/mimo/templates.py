"""Xiaomi MiMo-VL: ChatML with Hermes-style tool calls; the model thinks in ``<think>`` blocks.

The official template (``MiMo-VL.jinja``) is Qwen2.5's ChatML layout with a MiMo
default system prompt; tool calls are ``<tool_call>\\n{json}\\n</tool_call>``. The
template writes no reasoning, but MiMo-VL-RL/SFT answer with ``<think>…</think>`` first,
so the ``think`` reasoning parser is wired.

Sampling: chatfmt's defaults (no recommendation published in the sources consulted);
``session_len`` is the model's context length.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from ..chatml.markers import ENDOFTEXT, IM_END
from ..hermes.parser import HermesParser

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "MiMo-VL.jinja",
        name="mimo-vl",
        aliases=("mimo-vl-7b",),
        model_ids=("XiaomiMiMo/MiMo-VL-7B-RL", "XiaomiMiMo/MiMo-VL-7B-SFT"),
        tool_parser=HermesParser,
        reasoning_parser=ThinkParser,
        generation=GenerationConfig(stop_words=(IM_END, ENDOFTEXT), session_len=32768),
        variables={"bos_token": "", "eos_token": IM_END},
        description=(
            "MiMo-VL (official Jinja): ChatML, <tool_call>{json}</tool_call> calls, "
            "<think> reasoning in the model's output."
        ),
    ),
)
