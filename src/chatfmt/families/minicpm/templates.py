"""OpenBMB MiniCPM5: the official Jinja template with the ``minicpm5`` and ``think`` parsers.

ChatML turns (``<|im_start|>``/``<|im_end|>``); calls ``<function name="…"><param
name="…">…</param></function>`` (CDATA for values with ``<``, ``&`` or newlines);
``enable_thinking`` prefills ``<think>\\n`` (or an empty block when false). 131,072-token
context; sampling from the model card's no-think mode (temperature 0.7, top_p 0.95; thinking:
0.9 / 0.95).
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from ..chatml.markers import IM_END
from .markers import BOS
from .parser import MiniCPM5Parser

MINICPM5 = PackagedTemplate(
    "openbmb-MiniCPM5-1B.jinja",
    history=EARLIER_REASONING_DROPPED,
    name="minicpm5",
    aliases=("minicpm-5",),
    model_ids=("openbmb/MiniCPM5-1B", "openbmb/MiniCPM5-1B-SFT"),
    tool_parser=MiniCPM5Parser,
    reasoning_parser=ThinkParser,
    generation=GenerationConfig(
        session_len=131072, stop_words=(IM_END,), top_p=0.95, temperature=0.7
    ),
    variables={"bos_token": BOS, "eos_token": IM_END},
    description="MiniCPM5: ChatML, <think>, <function name=…><param name=…>…</param></function>.",
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (MINICPM5,)
