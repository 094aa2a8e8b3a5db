"""Qwen3-Coder and Qwen3.5: ChatML with ``<function=…><parameter=…>`` XML tool calls.

Both ship as their official Jinja templates (:class:`~chatfmt.jinja.packaged.PackagedTemplate`,
rendered exactly) with the ``qwen3_coder`` tool parser; Qwen3.5 also thinks in
``<think>…</think>`` (its generation prompt opens the block unless
``enable_thinking=False``).
"""

from __future__ import annotations

from ..config import GenerationConfig
from ..jinja.packaged import PackagedTemplate
from ..template import Template

_STOPS = ("<|im_end|>", "<|endoftext|>")

QWEN3_CODER = PackagedTemplate(
    "Qwen3-Coder.jinja",
    name="qwen3-coder",
    aliases=("qwen3_coder", "qwen3-coder-instruct"),
    model_ids=(
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8",
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8",
    ),
    model_patterns=(r"qwen3-coder",),
    tool_parser="qwen3_coder",
    generation=GenerationConfig(
        session_len=262144,
        stop_words=_STOPS,
        temperature=0.7,
        top_p=0.8,
        top_k=20,
        repetition_penalty=1.05,
    ),
    description=(
        "Qwen3-Coder: ChatML, tools listed as <function> XML, calls written "
        "<tool_call><function=name><parameter=k>v</parameter></function></tool_call>."
    ),
)

QWEN35 = PackagedTemplate(
    "Qwen3.5-4B.jinja",
    name="qwen3.5",
    aliases=("qwen35", "qwen3_5"),
    model_ids=(
        "Qwen/Qwen3.5-0.8B",
        "Qwen/Qwen3.5-4B",
        "Qwen/Qwen3.5-9B",
        "Qwen/Qwen3.5-27B",
        "Qwen/Qwen3.5-35B-A3B",
        "Qwen/Qwen3.5-397B-A17B",
    ),
    model_patterns=(r"qwen3\.5",),
    tool_parser="qwen3_coder",
    reasoning_parser="think",
    generation=GenerationConfig(
        session_len=262144,
        stop_words=_STOPS,
        temperature=1.0,
        top_p=0.95,
        top_k=20,
        extra={
            "min_p": 0.0,
            "presence_penalty": 1.5,
            "non_thinking": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0},
        },
    ),
    description=(
        "Qwen3.5: ChatML with <think> reasoning (enable_thinking option), tools as JSON in "
        "<tools>, calls in Qwen3-Coder XML form <function=name><parameter=k>v</parameter>."
    ),
)

#: This module's templates, registered by the registry in this order (see chatfmt.formats).
TEMPLATES: tuple[Template, ...] = (QWEN3_CODER, QWEN35)
