"""NVIDIA Nemotron: Nemotron Nano v2 (``<TOOLCALL>[…]</TOOLCALL>`` JSON calls) and
Nemotron 3 Nano (ChatML with Qwen3-Coder-style XML calls); both reason in ``<think>``.

Both ship as their official Jinja templates. Nano v2 switches thinking with ``/think`` and
``/no_think`` in the system or user messages; Nemotron 3 with ``enable_thinking``.
"""

from __future__ import annotations

import dataclasses

from ...config import GenerationConfig
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...parsing.xml_function import Qwen3CoderParser
from ...template import Template
from ..chatml.markers import IM_END
from .markers import SPECIAL_12
from .parser import NemotronJsonParser

NEMOTRON_NANO_V2 = PackagedTemplate(
    "NVIDIA-Nemotron-Nano-v2.jinja",
    history=EARLIER_REASONING_DROPPED,
    name="nemotron-nano-v2",
    aliases=("nemotron-nano-2", "nemotron_nano_v2"),
    model_ids=(
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2-FP8",
        "nvidia/NVIDIA-Nemotron-Nano-12B-v2",
    ),
    model_patterns=(r"nemotron-nano-(9|12)b-v2",),
    tool_parser=NemotronJsonParser,
    reasoning_parser=ThinkParser,
    generation=GenerationConfig(
        session_len=131072,
        stop_words=(SPECIAL_12,),
        temperature=0.6,
        top_p=0.95,
    ),
    description=(
        "NVIDIA Nemotron Nano v2: <SPECIAL_10>System / <SPECIAL_11>User|Assistant turns ended "
        "by <SPECIAL_12>, <think> reasoning, calls <TOOLCALL>[{name, arguments}]</TOOLCALL>."
    ),
)

NEMOTRON3_NANO = PackagedTemplate(
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
    history=dataclasses.replace(
        EARLIER_REASONING_DROPPED, kept_by=("truncate_history_thinking", False)
    ),
    name="nemotron3-nano",
    aliases=("nemotron-3-nano", "nemotron3"),
    model_ids=(
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8",
    ),
    model_patterns=(r"nemotron-3-nano",),
    tool_parser=Qwen3CoderParser,
    reasoning_parser=ThinkParser,
    generation=GenerationConfig(
        session_len=262144,
        stop_words=(IM_END,),
        temperature=1.0,
        top_p=1.0,
        extra={"tool_calling": {"temperature": 0.6, "top_p": 0.95}},
    ),
    description=(
        "NVIDIA Nemotron 3 Nano: ChatML, <think> reasoning (enable_thinking option), calls "
        "<tool_call><function=name><parameter=k>v</parameter></function></tool_call>."
    ),
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (NEMOTRON_NANO_V2, NEMOTRON3_NANO)
