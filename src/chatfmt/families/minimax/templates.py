"""MiniMax-M1, M2 and M3: the official Jinja templates with their model facts and parsers.

* M1: ``<beginning_of_sentence>ai name=assistant\\n…<end_of_sentence>``; tool calls are
  JSON lines in ``<tool_calls>`` (parser ``minimax_m1``).
* M2: ``]~b]ai\\n…[e~[``; the generation prompt opens ``<think>``; tool calls are
  ``<minimax:tool_call><invoke name=…><parameter name=…>`` (``minimax_m2``).
* M3: every tag prefixed by ``]<]minimax[>[``; reasoning in ``<mm:think>`` (a turn
  without reasoning starts with a bare ``</mm:think>``); the ``thinking_mode`` option
  (``enabled`` / ``disabled`` / ``adaptive``, default adaptive) chooses the prompt's
  prefix (``minimax_m3`` for both tool calls and reasoning).
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from .markers import END_OF_SENTENCE, MESSAGE_END
from .parser import MiniMaxM1Parser, MiniMaxM2Parser, MiniMaxM3Parser, MiniMaxM3ThinkParser

MINIMAX_M1 = PackagedTemplate(
    "MiniMax-M1.jinja",
    name="minimax-m1",
    model_ids=("MiniMaxAI/MiniMax-M1-80k", "MiniMaxAI/MiniMax-M1-40k"),
    tool_parser=MiniMaxM1Parser,
    reasoning_parser=ThinkParser,
    generation=GenerationConfig(
        stop_words=(END_OF_SENTENCE,), temperature=1.0, top_p=0.95, session_len=1_000_000
    ),
    description="MiniMax-M1 (official Jinja; <tool_calls> JSON lines, <think> reasoning)",
    # The official file writes a message's calls and drops its text; the model writes its
    # text first, then a newline and <tool_calls>, as it follows </think> (MiniMax-M1's
    # function-call guide).
    calls_turn_text=(
        "{{ '<beginning_of_sentence>ai name=assistant\\n<tool_calls>\\n' -}}",
        "{{ '<beginning_of_sentence>ai name=assistant\\n' -}}\n"
        "{%- if message.content is string and message.content | trim %}"
        "{{ message.content + '\\n' -}}{%- endif %}\n"
        "{{ '<tool_calls>\\n' -}}",
    ),
)

MINIMAX_M2 = PackagedTemplate(
    "MiniMax-M2.jinja",
    history=EARLIER_REASONING_DROPPED,
    name="minimax-m2",
    model_ids=("MiniMaxAI/MiniMax-M2",),
    tool_parser=MiniMaxM2Parser,
    reasoning_parser=ThinkParser,
    generation=GenerationConfig(
        stop_words=(MESSAGE_END,), temperature=1.0, top_p=0.95, top_k=40, session_len=196_608
    ),
    description="MiniMax-M2 (official Jinja; <minimax:tool_call>/<invoke> calls, <think> prefilled)",
)

MINIMAX_M3 = PackagedTemplate(
    "MiniMax-M3.jinja",
    name="minimax-m3",
    model_ids=("MiniMaxAI/MiniMax-M3",),
    tool_parser=MiniMaxM3Parser,
    reasoning_parser=MiniMaxM3ThinkParser,
    generation=GenerationConfig(
        stop_words=(MESSAGE_END,), temperature=1.0, top_p=0.95, top_k=40, session_len=1_048_576
    ),
    description="MiniMax-M3 (official Jinja; ]<]minimax[>[ <invoke> calls, <mm:think> reasoning)",
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (MINIMAX_M1, MINIMAX_M2, MINIMAX_M3)
