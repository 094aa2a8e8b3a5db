"""Liquid AI LFM2 / LFM2.5: ChatML turns, pythonic tool calls between ``<|tool_call_start|>`` markers.

The official Jinja files are shipped and rendered as they are (no native
template); the entries add the model facts, the ``lfm2`` tool parser and the
``think`` reasoning parser (LFM2 models write ``<think>…</think>`` when asked to reason). Only
``LFM2.5-8B-A1B.jinja`` renders assistant tool calls
(``<|tool_call_start|>[f(a='x', n=1)]<|tool_call_end|>``) and reasoning
(``<think>…</think>``); the other two write the message content only.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from ..chatml.markers import IM_END
from .markers import STARTOFTEXT
from .parser import LFM2Parser

_VARIABLES = {"bos_token": STARTOFTEXT, "eos_token": IM_END}
_STOP = (IM_END,)

#: LFM2.5's recommended sampling (the same for the dense and the MoE model).
_LFM25_GENERATION = GenerationConfig(
    stop_words=_STOP,
    temperature=0.1,
    top_p=0.1,
    top_k=50,
    repetition_penalty=1.05,
    session_len=32768,
)

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "LFM2-8B-A1B.jinja",
        name="lfm2",
        model_ids=(
            "LiquidAI/LFM2-8B-A1B",
            "LiquidAI/LFM2-350M",
            "LiquidAI/LFM2-700M",
            "LiquidAI/LFM2-1.2B",
            "LiquidAI/LFM2-2.6B",
            "LiquidAI/LFM2-2.6B-Exp",
        ),
        # the task-tuned dense models (LFM2-1.2B-Tool, LFM2-350M-Extract, …) share the template
        model_patterns=(r"^lfm2-(350m|700m|1\.2b|2\.6b)(-|$)",),
        aliases=("lfm2-8b-a1b",),
        tool_parser=LFM2Parser,
        reasoning_parser=ThinkParser,
        generation=GenerationConfig(
            stop_words=_STOP,
            temperature=0.3,
            top_p=1.0,
            repetition_penalty=1.05,
            session_len=32768,
            extra={"min_p": 0.15},
        ),
        variables=_VARIABLES,
        description="LFM2 (ChatML; pythonic tool calls in <|tool_call_start|> blocks)",
    ),
    PackagedTemplate(
        "LFM2.5-8B-A1B.jinja",
        name="lfm2.5-moe",
        model_ids=("LiquidAI/LFM2.5-8B-A1B",),
        aliases=("lfm2.5-8b-a1b",),
        tool_parser=LFM2Parser,
        reasoning_parser=ThinkParser,
        generation=_LFM25_GENERATION,
        variables=_VARIABLES,
        description="LFM2.5 MoE (ChatML; <think> reasoning; pythonic tool calls)",
    ),
    PackagedTemplate(
        "LFM2.5-Instruct.jinja",
        name="lfm2.5",
        model_ids=(
            "LiquidAI/LFM2.5-1.2B-Instruct",
            "LiquidAI/LFM2.5-1.2B-Thinking",
            "LiquidAI/LFM2.5-1.2B-JP",
        ),
        model_patterns=(r"^lfm2\.5-1\.2b-(instruct|thinking|jp)",),
        aliases=("lfm2.5-instruct",),
        tool_parser=LFM2Parser,
        reasoning_parser=ThinkParser,
        generation=_LFM25_GENERATION,
        variables=_VARIABLES,
        description="LFM2.5 (ChatML; <think> reasoning; pythonic tool calls)",
    ),
)
