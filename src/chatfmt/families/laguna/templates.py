"""Poolside Laguna: ``<user>…</user>`` / ``<assistant>…</assistant>`` turns, GLM-4.5-style calls.

Three official templates: Laguna XS.2 and XS 2.1 (``poolside-Laguna-XS.2.jinja``,
``poolside-Laguna-XS-2.1.jinja``: thinking off by default, newline-separated tags) and
Laguna S 2.1 (``poolside-Laguna-S-2.1.jinja``: thinking on by
default, tags without newlines). All write ``〈|EOS|〉`` first, tool calls as
``<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`` (parsed by
``glm45``) and open ``<think>`` (or ``</think>`` with thinking off) in the generation
prompt. A turn ends with ``</assistant>`` (or the ``〈|EOS|〉`` token).

Sampling: chatfmt's defaults (no recommendation published in the sources consulted);
``session_len`` is the model's context length.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...template import Template
from ..glm.parser import GLM45Parser
from .markers import ASSISTANT_CLOSE, EOS

_GENERATION = GenerationConfig(stop_words=(ASSISTANT_CLOSE, EOS), session_len=131072)
_VARIABLES = {"bos_token": EOS, "eos_token": EOS}


def _laguna(file: str, name: str, ids: tuple[str, ...], aliases: tuple[str, ...]) -> Template:
    return PackagedTemplate(
        file,
        name=name,
        aliases=aliases,
        model_ids=ids,
        tool_parser=GLM45Parser,
        reasoning_parser=ThinkParser,
        generation=_GENERATION,
        variables=_VARIABLES,
        description=(
            f"Poolside {name} (official Jinja): <user>/<assistant> turns, "
            "<tool_call>name<arg_key>…</tool_call> calls, <think> reasoning."
        ),
    )


TEMPLATES: tuple[Template, ...] = (
    _laguna(
        "poolside-Laguna-XS.2.jinja",
        "laguna-xs.2",
        ("poolside/Laguna-XS.2", "poolside/Laguna-XS.2-FP8", "poolside/Laguna-XS.2-INT4"),
        ("laguna-xs2",),
    ),
    _laguna(
        "poolside-Laguna-XS-2.1.jinja",
        "laguna-xs-2.1",
        (
            "poolside/Laguna-XS-2.1",
            "poolside/Laguna-XS-2.1-FP8",
            "poolside/Laguna-XS-2.1-INT4",
            "poolside/Laguna-XS-2.1-NVFP4",
        ),
        ("laguna-xs2.1",),
    ),
    _laguna("poolside-Laguna-S-2.1.jinja", "laguna-s-2.1", ("poolside/Laguna-S-2.1",), ()),
)
