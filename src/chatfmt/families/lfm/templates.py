"""Liquid AI LFM2 / LFM2.5: ChatML turns, pythonic tool calls between ``<|tool_call_start|>`` markers.

The official Jinja files are shipped and rendered as they are (no native
template); the entries add the model facts, the ``lfm2`` tool parser and the
``think`` reasoning parser (LFM2 models write ``<think>…</think>`` when asked to reason). Only
``LFM2.5-8B-A1B.jinja`` renders assistant tool calls
(``<|tool_call_start|>[f(a='x', n=1)]<|tool_call_end|>``) and reasoning
(``<think>…</think>``); the other two write the message content only, so chatfmt writes an
assistant message's calls into its content the way the model writes them (as LFM2.5-8B-A1B's
file renders them; ``strict_history=True`` refuses them instead).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ...config import GenerationConfig
from ...errors import UnsupportedFeatureError
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...protocol import Message
from ...template import Template
from ..chatml.markers import IM_END
from .markers import STARTOFTEXT, TOOL_CALL_END, TOOL_CALL_START
from .parser import LFM2Parser

_VARIABLES = {"bos_token": STARTOFTEXT, "eos_token": IM_END}


def calls_in_content(m: Message) -> str:
    """An assistant message's content with its tool calls written after it as LFM2 models
    write them and as ``LFM2.5-8B-A1B.jinja`` renders them:
    ``<|tool_call_start|>[f(a='x', n=1)]<|tool_call_end|>`` (for the official files that
    write the content only)."""
    calls = []
    for k, call in enumerate(m.tool_calls):
        if call.is_code or not isinstance(call.arguments, Mapping):
            raise UnsupportedFeatureError(
                "LFM2 writes a call's arguments as keywords: they must be a JSON object",
                index=m.index,
                field=f"tool_calls[{k}]",
            )
        args = ", ".join(f"{key}={_argument(v)}" for key, v in call.arguments.items())
        calls.append(f"{call.name}({args})")
    return f"{m.content or ''}{TOOL_CALL_START}[{', '.join(calls)}]{TOOL_CALL_END}"


def _argument(value: Any) -> str:
    """One argument value as ``LFM2.5-8B-A1B.jinja`` writes it (a string in single quotes,
    an object as JSON, anything else as Python writes it), as a Python literal throughout."""
    if isinstance(value, str):
        plain = not any(c in value for c in "'\\\n\r")
        return f"'{value}'" if plain else repr(value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


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
        calls_in_content=calls_in_content,
    ),
    PackagedTemplate(
        "LFM2.5-8B-A1B.jinja",
        history=dataclasses.replace(EARLIER_REASONING_DROPPED, kept_by=("preserve_thinking", True)),
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
        calls_in_content=calls_in_content,
    ),
)
