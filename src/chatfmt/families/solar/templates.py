"""Upstage Solar Open 100B: the official Jinja template with the ``solar_open`` parsers.

The assistant writes ``<|think|>…<|end|>`` (unless ``reasoning_effort`` is low/minimal),
then ``<|begin|>assistant<|content|>…<|end|>`` or
``<|begin|>assistant<|tool_calls|><|tool_call:begin|>…<|tool_call:end|>…<|calls|>``.
``<|end|>`` also closes the reasoning, so it is markup, not the end of the turn: the turn
ends at ``<|flush|>``; ``<|calls|>`` is a tool stop word. Sampling left at chatfmt's defaults.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import CALLS, FLUSH
from .parser import SolarOpenParser, SolarOpenThinkParser

SOLAR_OPEN = PackagedTemplate(
    "upstage-Solar-Open-100B.jinja",
    name="solar-open",
    aliases=("solar-open-100b",),
    model_ids=("upstage/Solar-Open-100B",),
    tool_parser=SolarOpenParser,
    reasoning_parser=SolarOpenThinkParser,
    generation=GenerationConfig(session_len=131072, stop_words=(FLUSH,), tool_stop_words=(CALLS,)),
    description="Solar Open: <|begin|>role<|content|>…<|end|>, <|think|> reasoning, "
    "<|tool_calls|><|tool_call:begin|>id<|tool_call:name|>…<|tool_call:args|>{…}.",
    # the model writes text beside calls as a <|content|> segment before the <|tool_calls|> one
    text_beside_calls={},
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (SOLAR_OPEN,)
