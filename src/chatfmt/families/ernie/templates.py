"""Baidu ERNIE 4.5: ``User: …\\n`` / ``Assistant: …<|end_of_sentence|>`` turns after
``<|begin_of_sentence|>``.

The Jinja file is shipped and rendered as it is: the ERNIE 4.5 chat template as transformers
publishes it (``DEFAULT_CHAT_TEMPLATE`` of ``src/transformers/models/ernie4_5/
convert_ernie4_5_tokenizer.py``, the template its converted ERNIE 4.5 tokenizers carry). It
has no tool definitions and no reasoning markup.

ERNIE-4.5-21B-A3B-Thinking's own ``chat_template.jinja`` was not reachable when this was
written: its ids resolve to the same family format, read as vLLM serves the model
(``--tool-call-parser ernie45 --reasoning-parser ernie45``: the output starts inside the
reasoning, which ``</think>`` closes; calls in ``<tool_call>`` blocks). For the model's tool
definitions, load its own template file (``chatfmt.get_template("chat_template.jinja")``)
and pair it with :func:`chatfmt.with_tool_parser`.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import BEGIN_OF_SENTENCE, END_OF_SENTENCE, EOS
from .parser import Ernie45Parser, Ernie45ThinkParser

_FILE = "baidu-ERNIE-4.5-PT.jinja"
_GENERATION = GenerationConfig(stop_words=(END_OF_SENTENCE, EOS), session_len=131072)
_VARIABLES = {"cls_token": BEGIN_OF_SENTENCE, "sep_token": END_OF_SENTENCE}

#: The post-trained ERNIE 4.5 text models (0.3B, 21B-A3B, 300B-A47B).
ERNIE45 = PackagedTemplate(
    _FILE,
    name="ernie-4.5",
    aliases=("ernie4.5", "ernie-4.5-pt"),
    model_ids=(
        "baidu/ERNIE-4.5-0.3B-PT",
        "baidu/ERNIE-4.5-21B-A3B-PT",
        "baidu/ERNIE-4.5-300B-A47B-PT",
        "baidu/ERNIE-4.5-0.3B-Paddle",
        "baidu/ERNIE-4.5-21B-A3B-Paddle",
        "baidu/ERNIE-4.5-300B-A47B-Paddle",
    ),
    # every ERNIE-4.5 text model (the VL models have a format of their own)
    model_patterns=(r"^ernie-4\.5-(?!vl-)",),
    tool_parser=Ernie45Parser,
    generation=_GENERATION,
    variables=_VARIABLES,
    description="ERNIE 4.5: <|begin_of_sentence|>User: …\\nAssistant: …<|end_of_sentence|>.",
)

#: ERNIE-4.5-21B-A3B-Thinking: the family format; the output starts inside the reasoning.
ERNIE45_THINKING = PackagedTemplate(
    _FILE,
    name="ernie-4.5-thinking",
    aliases=("ernie4.5-thinking",),
    model_ids=("baidu/ERNIE-4.5-21B-A3B-Thinking",),
    model_patterns=(r"^ernie-4\.5-(?!vl-).*thinking",),
    tool_parser=Ernie45Parser,
    reasoning_parser=Ernie45ThinkParser,
    generation=_GENERATION,
    variables=_VARIABLES,
    description=(
        "ERNIE 4.5 Thinking: the ERNIE 4.5 format; reasoning…</think>, then the answer (bare "
        "or in <response>…</response>) and <tool_call> JSON calls."
    ),
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (ERNIE45, ERNIE45_THINKING)
