"""Built-in chat formats, one module per family.

A module defines its templates and lists them in a module-level ``TEMPLATES`` tuple;
it registers nothing itself. :data:`BUILTIN_MODULES` is the one list of built-in
modules: the registry adds their templates in this order on first use and refuses any
name, alias or model-id collision, so no module can silently replace another's template.
"""

from __future__ import annotations

import importlib

from ..template import Template

#: Every built-in format module, in registration order.
BUILTIN_MODULES: tuple[str, ...] = (
    "chatml",
    "cohere",
    "deepseek",
    "gemma",
    "glm",
    "granite",
    "hermes",
    "internlm",
    "lfm",
    "llama",
    "misc",
    "mistral",
    "nemotron",
    "phi",
    "qwen",
    "qwen3_coder",
    "seed",
    "smollm",
    "stepfun",
    "yi",
)


def builtin_templates() -> list[Template]:
    """The built-in templates: each module's ``TEMPLATES``, in :data:`BUILTIN_MODULES` order."""
    found: list[Template] = []
    for name in BUILTIN_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        found.extend(module.TEMPLATES)
    return found
