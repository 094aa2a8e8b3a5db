"""Muse Glimmer (ATEM): the official Jinja template with its parser.

Harmony-like segments: ``<|start|>assistant to=RECIPIENT<|message|>…`` ended by
``<|eom|>`` (more segments follow) or ``<|eot|>`` (end of turn); ``to=self`` is
reasoning, tool calls are ``<atem:function_calls>`` blocks (parser ``glimmer``).
No public model id is known, so it is registered under its name only.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...template import Template
from .markers import EOT
from .parser import GlimmerParser

MUSE_GLIMMER = PackagedTemplate(
    "muse-glimmer.jinja",
    name="muse-glimmer",
    aliases=("glimmer",),
    tool_parser=GlimmerParser,
    generation=GenerationConfig(stop_words=(EOT,)),
    description="Muse Glimmer (official Jinja; to=self reasoning, <atem:function_calls> calls)",
    # the model writes text beside calls as a to=user message that does not end the turn
    text_beside_calls={"end_turn": False},
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (MUSE_GLIMMER,)
