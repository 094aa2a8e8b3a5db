"""The built-in chat-format families: one package per family, listed once in :data:`FAMILIES`.

A family package (``chatfmt/families/<family>/``) holds its templates, its parsers and
a ``markers`` module with its control tokens, and exports three names:

* ``TEMPLATES`` — its :class:`~chatfmt.template.Template` objects;
* ``TOOL_PARSERS`` — its tool-call parser classes, each with its extra names;
* ``REASONING_PARSERS`` — its reasoning parser classes, each with its extra names;
* ``TOOL_CALL_FORMATS`` (when it has tool calls) — how each tool parser's calls are
  written, as :class:`~chatfmt.parsing.ToolCallFormat` data built from its markers.

A family registers nothing when imported. The template registry
(:data:`chatfmt.registry.REGISTRY`) and the parser tables
(:data:`chatfmt.parsing.TOOL_PARSERS`, :data:`~chatfmt.parsing.REASONING_PARSERS`) read
every family listed in :data:`FAMILIES` on their first lookup and refuse any name,
alias or model-id collision, so no behaviour depends on import order. Importing this
package imports no family.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..parsing.base import FormatParser
    from ..parsing.derived_format import ToolCallFormat
    from ..template import Template

#: A family's tool parsers: parser class → extra names (besides the class's ``name``).
ToolParsers = Mapping["type[FormatParser]", tuple[str, ...]]
#: A family's reasoning parsers: parser class (or factory with a ``name``) → extra names.
ReasoningParsers = Mapping["Callable[..., FormatParser]", tuple[str, ...]]

#: A family's tool-call formats: tool parser class → the forms its templates write.
ToolCallFormats = Mapping["type[FormatParser]", "tuple[ToolCallFormat, ...]"]

#: Every built-in family: name → module. The one list of built-in families.
FAMILIES: Mapping[str, str] = {
    "apertus": "chatfmt.families.apertus",
    "apriel": "chatfmt.families.apriel",
    "bielik": "chatfmt.families.bielik",
    "chatml": "chatfmt.families.chatml",
    "cohere": "chatfmt.families.cohere",
    "deepseek": "chatfmt.families.deepseek",
    "ernie": "chatfmt.families.ernie",
    "fireworks": "chatfmt.families.fireworks",
    "functionary": "chatfmt.families.functionary",
    "gemma": "chatfmt.families.gemma",
    "gigachat": "chatfmt.families.gigachat",
    "glimmer": "chatfmt.families.glimmer",
    "glm": "chatfmt.families.glm",
    "gpt_oss": "chatfmt.families.gpt_oss",
    "granite": "chatfmt.families.granite",
    "hermes": "chatfmt.families.hermes",
    "hunyuan": "chatfmt.families.hunyuan",
    "internlm": "chatfmt.families.internlm",
    "jamba": "chatfmt.families.jamba",
    "kimi": "chatfmt.families.kimi",
    "laguna": "chatfmt.families.laguna",
    "lfm": "chatfmt.families.lfm",
    "ling": "chatfmt.families.ling",
    "llama": "chatfmt.families.llama",
    "mimo": "chatfmt.families.mimo",
    "minicpm": "chatfmt.families.minicpm",
    "minimax": "chatfmt.families.minimax",
    "misc": "chatfmt.families.misc",
    "mistral": "chatfmt.families.mistral",
    "nemotron": "chatfmt.families.nemotron",
    "phi": "chatfmt.families.phi",
    "qwen": "chatfmt.families.qwen",
    "reka": "chatfmt.families.reka",
    "rwkv": "chatfmt.families.rwkv",
    "seed": "chatfmt.families.seed",
    "smollm": "chatfmt.families.smollm",
    "solar": "chatfmt.families.solar",
    "spark": "chatfmt.families.spark",
    "stepfun": "chatfmt.families.stepfun",
    "yi": "chatfmt.families.yi",
}


def family(name: str) -> ModuleType:
    """The module of family ``name`` (imported on first use)."""
    return importlib.import_module(FAMILIES[name])


def families() -> Iterator[ModuleType]:
    """Every family module, in :data:`FAMILIES` order."""
    for name in FAMILIES:
        yield family(name)


def builtin_templates() -> list[Template]:
    """The built-in templates: each family's ``TEMPLATES``, in :data:`FAMILIES` order."""
    return [tpl for module in families() for tpl in module.TEMPLATES]


def builtin_parsers(kind: str) -> Iterator[tuple[Any, tuple[str, ...]]]:
    """Each family's parsers of ``kind`` (``"tool"`` or ``"reasoning"``) with their extra names."""
    attr = {"tool": "TOOL_PARSERS", "reasoning": "REASONING_PARSERS"}[kind]
    for module in families():
        yield from getattr(module, attr).items()
