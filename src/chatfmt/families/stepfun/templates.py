"""StepFun Step-3.5: ChatML, ``<think>`` reasoning, Qwen3-Coder-style XML tool calls.

Shipped as its official Jinja template; the generation prompt opens ``<think>``.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...parsing.xml_function import Qwen3CoderParser
from ...template import Template
from ..chatml.markers import IM_END

STEP35_FLASH = PackagedTemplate(
    "StepFun3.5-Flash.jinja",
    history=EARLIER_REASONING_DROPPED,
    name="step3.5",
    aliases=("step-3.5", "step3p5", "step-3.5-flash"),
    model_ids=("stepfun-ai/Step-3.5-Flash", "stepfun-ai/Step-3.5-Flash-Int4"),
    model_patterns=(r"step-?3\.5",),
    tool_parser=Qwen3CoderParser,
    reasoning_parser=ThinkParser,
    generation=GenerationConfig(
        session_len=262144,
        stop_words=(IM_END,),
        temperature=1.0,
        top_p=0.95,
    ),
    description=(
        "Step-3.5-Flash: ChatML, reasoning in <think> (opened by the generation prompt), "
        "calls <tool_call><function=name><parameter=k>v</parameter></function></tool_call>."
    ),
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (STEP35_FLASH,)
