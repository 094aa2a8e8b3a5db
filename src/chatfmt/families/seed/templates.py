"""ByteDance Seed-OSS: ``<seed:bos>role\\n…<seed:eos>`` turns, ``<seed:think>`` reasoning and
``<seed:tool_call><function=…><parameter=…>`` XML tool calls.

Shipped as its official Jinja template (option ``thinking_budget``: ``0`` closes the
thinking block in the generation prompt, a positive budget asks the model to write
``<seed:cot_budget_reflect>`` notes inside its reasoning, which stay reasoning text).
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import SEED_BOS, SEED_EOS
from .parser import SeedOssParser, SeedThinkParser

SEED_OSS = PackagedTemplate(
    "ByteDance-Seed-OSS.jinja",
    name="seed-oss",
    aliases=("seed_oss", "seed-oss-36b"),
    model_ids=("ByteDance-Seed/Seed-OSS-36B-Instruct",),
    model_patterns=(r"seed-oss.*instruct",),
    tool_parser=SeedOssParser,
    reasoning_parser=SeedThinkParser,
    generation=GenerationConfig(
        session_len=524288,
        stop_words=(SEED_EOS,),
        temperature=1.1,
        top_p=0.95,
    ),
    variables={"bos_token": SEED_BOS, "eos_token": SEED_EOS},
    description=(
        "Seed-OSS-36B-Instruct: <seed:bos>role\\n…<seed:eos> turns, <seed:think> reasoning, "
        "calls <seed:tool_call><function=name><parameter=k>v</parameter></function>."
    ),
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (SEED_OSS,)
