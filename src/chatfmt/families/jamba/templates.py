"""AI21 Jamba 1.7 (Mini, Large): ``<|bom|><|role|> …<|eom|>`` turns, tools in the system turn,
calls ``<tool_calls>[{"name": …, "arguments": …}]</tool_calls>``.

The Jinja file is shipped and rendered as it is: the chat template of the model's GGUF
(``tokenizer.chat_template`` of bartowski's AI21-Jamba-Mini-1.7 GGUF, as kept in the public
repository r-rojo/rampipe, ``tests/fixtures/jamba_mini_1_7_chat_template.jinja``); its
options are the template's own variables (``documents``, ``knobs``, ``generation_preamble``).
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import BOS, EOM, EOS
from .parser import JambaParser

JAMBA_17 = PackagedTemplate(
    "ai21labs-AI21-Jamba-Mini-1.7.jinja",
    name="jamba-1.7",
    aliases=("jamba-mini-1.7", "jamba-large-1.7"),
    model_ids=("ai21labs/AI21-Jamba-Mini-1.7", "ai21labs/AI21-Jamba-Large-1.7"),
    model_patterns=(r"jamba-(mini|large)-1\.7",),
    tool_parser=JambaParser,
    generation=GenerationConfig(stop_words=(EOM, EOS), session_len=262144),
    variables={"bos_token": BOS, "eos_token": EOS},
    description="AI21 Jamba 1.7: <|bom|><|role|> …<|eom|>; <tool_calls>[…]</tool_calls>.",
)

TEMPLATES: tuple[Template, ...] = (JAMBA_17,)
