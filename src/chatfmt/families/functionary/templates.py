"""MeetKai Functionary v3.1 and v3.2 (Llama 3.1 based): official Jinja templates with parsers.

v3.1 writes Llama 3.1's custom tool calls ``<function=NAME>{…}</function>`` (and
``<|python_tag|>`` code) and ends a turn with calls at ``<|eom_id|>``; v3.2 writes
``>>>RECIPIENT\\n`` segments (``all`` = text for the user), its generation prompt
ending with ``>>>``.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import BEGIN_OF_TEXT, END_OF_TEXT, EOM_ID, EOT_ID
from .parser import FunctionaryV31Parser, FunctionaryV32Parser

_BOS = {"bos_token": BEGIN_OF_TEXT, "eos_token": EOT_ID}
#: Llama 3.1's context and sampling defaults (the models are Llama 3.1 fine-tunes).
_GEN = GenerationConfig(
    stop_words=(EOT_ID, END_OF_TEXT), temperature=0.6, top_p=0.9, session_len=131072
)

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "meetkai-functionary-medium-v3.1.jinja",
        name="functionary-v3.1",
        model_ids=("meetkai/functionary-medium-v3.1", "meetkai/functionary-small-v3.1"),
        tool_parser=FunctionaryV31Parser,
        generation=_GEN.replace(stop_words=(EOT_ID, EOM_ID, END_OF_TEXT)),
        variables=_BOS,
        description="Functionary v3.1: Llama 3.1 turns, <function=NAME>{…}</function> calls",
    ),
    PackagedTemplate(
        "meetkai-functionary-medium-v3.2.jinja",
        name="functionary-v3.2",
        model_ids=("meetkai/functionary-medium-v3.2", "meetkai/functionary-small-v3.2"),
        tool_parser=FunctionaryV32Parser,
        generation=_GEN,
        variables=_BOS,
        description="Functionary v3.2: Llama 3 turns, >>>recipient segments (all = text)",
    ),
)
