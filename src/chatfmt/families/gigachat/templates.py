"""Sber GigaChat 3 and 3.1 (10B-A1.8B "Lightning"): official Jinja templates, ``gigachat3`` parsers.

Roles are written ``role<|role_sep|>\\ntext<|message_sep|>\\n\\n``. GigaChat 3 writes a call
as a ``function call`` role after the answer's ``<|message_sep|>``, so its turn ends at the
EOS ``</s>`` only; GigaChat 3.1 writes ``<|function_call|>{…}`` inside the answer and ends
the turn with ``<|message_sep|>``. 262,144-token context; sampling left at chatfmt's defaults.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import BOS, EOS, MESSAGE_SEP
from .parser import GigaChat3Parser, GigaChat31Parser

_VARIABLES = {"bos_token": BOS, "eos_token": EOS}

GIGACHAT3 = PackagedTemplate(
    "GigaChat3-10B-A1.8B.jinja",
    name="gigachat3",
    model_ids=(
        "ai-sage/GigaChat3-10B-A1.8B",
        "ai-sage/GigaChat3-10B-A1.8B-bf16",
        "ai-sage/GigaChat3-702B-A36B-preview",
    ),
    tool_parser=GigaChat3Parser,
    generation=GenerationConfig(session_len=262144, stop_words=(EOS,)),
    variables=_VARIABLES,
    description="GigaChat 3: role<|role_sep|>\\n…<|message_sep|>, function call<|role_sep|>\\n{…}.",
)

GIGACHAT31 = PackagedTemplate(
    "GigaChat3.1-10B-A1.8B.jinja",
    name="gigachat3.1",
    model_ids=("ai-sage/GigaChat3.1-10B-A1.8B", "ai-sage/GigaChat3.1-10B-A1.8B-bf16"),
    tool_parser=GigaChat31Parser,
    generation=GenerationConfig(session_len=262144, stop_words=(MESSAGE_SEP, EOS)),
    variables=_VARIABLES,
    description="GigaChat 3.1: role<|role_sep|>\\n…, <|function_call|>{…}<|message_sep|>.",
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (GIGACHAT3, GIGACHAT31)
