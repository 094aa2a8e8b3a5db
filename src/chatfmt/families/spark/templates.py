"""iFlytek Spark X2.5: DeepSeek-style role tokens, GLM-4.5-style ``<arg_key>`` tool calls.

The official template (``Spark2.5.jinja``) writes ``<｜start▁of▁sentence｜><|Bot|>``
turns closed by ``<｜end▁of▁sentence｜>``, tool calls as
``<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value>…</tool_call>`` (parsed by
``glm45``), and opens ``<think>`` in the generation prompt (thinking is on by default;
``enable_thinking=False`` writes ``</think>`` instead).

Sampling: chatfmt's defaults (no recommendation published in the sources consulted);
``session_len`` is the model's context length.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from ..glm.parser import GLM45Parser
from .markers import END_OF_SENTENCE, START_OF_SENTENCE

BOS = START_OF_SENTENCE
EOS = END_OF_SENTENCE

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "Spark2.5.jinja",
        name="spark-x2.5",
        aliases=("spark2.5", "spark-x2.5-4b"),
        model_ids=(
            "XHToken/Spark-X2.5-1.7B",
            "XHToken/Spark-X2.5-4B",
            "XHToken/Spark-X2.5-4B-FP8",
        ),
        tool_parser=GLM45Parser,
        reasoning_parser=ThinkParser,
        generation=GenerationConfig(stop_words=(EOS,), session_len=32768),
        variables={"bos_token": BOS, "eos_token": EOS},
        description=(
            "Spark X2.5 (official Jinja): <|User|>/<|Bot|> turns, GLM-4.5-style "
            "<tool_call>name<arg_key>…</arg_value></tool_call> calls, <think> reasoning (on by default)."
        ),
    ),
)
