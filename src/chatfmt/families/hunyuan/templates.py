"""Tencent Hy3 (Hunyuan 3) preview: the official Jinja template with the ``hunyuan`` parsers.

The prompt ends with ``<think:opensource></think:opensource>`` for ``reasoning_effort``
``no_think`` (the default) and opens ``<think:opensource>`` for ``low`` / ``high``; calls are
``<tool_calls:opensource>`` blocks of ``<arg_key:opensource>``/``<arg_value:opensource>``
pairs; the turn ends at ``<｜hy_eos:opensource｜>``. Sampling from SGLang's cookbook
(temperature 0.7, top_p 0.9); 262,144-token context.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import HY_EOS_OPENSOURCE
from .parser import HunyuanParser, HunyuanThinkParser

EOS = HY_EOS_OPENSOURCE

HY3 = PackagedTemplate(
    "tencent-Hy3.jinja",
    history=EARLIER_REASONING_DROPPED,
    name="hy3",
    aliases=("hunyuan3", "hy3-preview"),
    model_ids=("tencent/Hy3-preview",),
    tool_parser=HunyuanParser,
    reasoning_parser=HunyuanThinkParser,
    generation=GenerationConfig(session_len=262144, stop_words=(EOS,), top_p=0.9, temperature=0.7),
    description="Hy3: <｜hy_User:opensource｜>/<｜hy_Assistant:opensource｜>, "
    "<think:opensource>, <tool_call:opensource>name<tool_sep:opensource><arg_key:…>/<arg_value:…>.",
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (HY3,)
