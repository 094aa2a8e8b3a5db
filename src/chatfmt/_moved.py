"""Old module paths of the family modules, kept importable for one release.

Until 0.2 the families lived in two flat packages (``chatfmt.formats.<module>`` and
``chatfmt.parsing.<module>``). :data:`MOVED` maps each old path to its module under
:mod:`chatfmt.families`; importing an old path returns the new module (the same
object, so classes and constants are identical) and emits a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

#: Old module path → new module path.
MOVED: Mapping[str, str] = {
    "chatfmt.formats.apertus": "chatfmt.families.apertus.templates",
    "chatfmt.formats.apriel": "chatfmt.families.apriel.templates",
    "chatfmt.formats.bielik": "chatfmt.families.bielik.templates",
    "chatfmt.formats.chatml": "chatfmt.families.chatml.templates",
    "chatfmt.formats.cohere": "chatfmt.families.cohere.templates",
    "chatfmt.formats.deepseek": "chatfmt.families.deepseek.templates",
    "chatfmt.formats.deepseek_dsml": "chatfmt.families.deepseek.dsml_templates",
    "chatfmt.formats.fireworks": "chatfmt.families.fireworks.templates",
    "chatfmt.formats.functionary": "chatfmt.families.functionary.templates",
    "chatfmt.formats.gemma": "chatfmt.families.gemma.templates",
    "chatfmt.formats.gigachat": "chatfmt.families.gigachat.templates",
    "chatfmt.formats.glimmer": "chatfmt.families.glimmer.templates",
    "chatfmt.formats.glm": "chatfmt.families.glm.templates",
    "chatfmt.formats.gpt_oss": "chatfmt.families.gpt_oss.templates",
    "chatfmt.formats.granite": "chatfmt.families.granite.templates",
    "chatfmt.formats.hermes": "chatfmt.families.hermes.templates",
    "chatfmt.formats.hunyuan": "chatfmt.families.hunyuan.templates",
    "chatfmt.formats.internlm": "chatfmt.families.internlm.templates",
    "chatfmt.formats.kimi": "chatfmt.families.kimi.templates",
    "chatfmt.formats.laguna": "chatfmt.families.laguna.templates",
    "chatfmt.formats.lfm": "chatfmt.families.lfm.templates",
    "chatfmt.formats.ling": "chatfmt.families.ling.templates",
    "chatfmt.formats.llama": "chatfmt.families.llama.templates",
    "chatfmt.formats.mimo": "chatfmt.families.mimo.templates",
    "chatfmt.formats.minicpm": "chatfmt.families.minicpm.templates",
    "chatfmt.formats.minimax": "chatfmt.families.minimax.templates",
    "chatfmt.formats.misc": "chatfmt.families.misc.templates",
    "chatfmt.formats.mistral": "chatfmt.families.mistral.templates",
    "chatfmt.formats.nemotron": "chatfmt.families.nemotron.templates",
    "chatfmt.formats.phi": "chatfmt.families.phi.templates",
    "chatfmt.formats.qwen": "chatfmt.families.qwen.templates",
    "chatfmt.formats.qwen3_coder": "chatfmt.families.qwen.coder_templates",
    "chatfmt.formats.reka": "chatfmt.families.reka.templates",
    "chatfmt.formats.rwkv": "chatfmt.families.rwkv.templates",
    "chatfmt.formats.seed": "chatfmt.families.seed.templates",
    "chatfmt.formats.smollm": "chatfmt.families.smollm.templates",
    "chatfmt.formats.solar": "chatfmt.families.solar.templates",
    "chatfmt.formats.spark": "chatfmt.families.spark.templates",
    "chatfmt.formats.stepfun": "chatfmt.families.stepfun.templates",
    "chatfmt.formats.yi": "chatfmt.families.yi.templates",
    "chatfmt.parsing.apertus": "chatfmt.families.apertus.parser",
    "chatfmt.parsing.apriel": "chatfmt.families.apriel.parser",
    "chatfmt.parsing.chatglm": "chatfmt.families.glm.parser",
    "chatfmt.parsing.command_r": "chatfmt.families.cohere.parser",
    "chatfmt.parsing.deepseek": "chatfmt.families.deepseek.parser",
    "chatfmt.parsing.fireworks": "chatfmt.families.fireworks.parser",
    "chatfmt.parsing.functionary": "chatfmt.families.functionary.parser",
    "chatfmt.parsing.gemma4": "chatfmt.families.gemma.parser",
    "chatfmt.parsing.gigachat": "chatfmt.families.gigachat.parser",
    "chatfmt.parsing.glimmer": "chatfmt.families.glimmer.parser",
    "chatfmt.parsing.granite": "chatfmt.families.granite.parser",
    "chatfmt.parsing.harmony": "chatfmt.families.gpt_oss.parser",
    "chatfmt.parsing.hermes": "chatfmt.families.hermes.parser",
    "chatfmt.parsing.hunyuan": "chatfmt.families.hunyuan.parser",
    "chatfmt.parsing.internlm2": "chatfmt.families.internlm.parser",
    "chatfmt.parsing.jamba": "chatfmt.families.jamba.parser",
    "chatfmt.parsing.kimi": "chatfmt.families.kimi.parser",
    "chatfmt.parsing.kimi_k3": "chatfmt.families.kimi.k3_parser",
    "chatfmt.parsing.llama3": "chatfmt.families.llama.parser",
    "chatfmt.parsing.minicpm": "chatfmt.families.minicpm.parser",
    "chatfmt.parsing.minimax": "chatfmt.families.minimax.parser",
    "chatfmt.parsing.mistral": "chatfmt.families.mistral.parser",
    "chatfmt.parsing.nemotron": "chatfmt.families.nemotron.parser",
    "chatfmt.parsing.qwen3_coder": "chatfmt.parsing.xml_function",
    "chatfmt.parsing.solar": "chatfmt.families.solar.parser",
}


#: Names that moved out of a module that stays: (module, name) → the module that has it now.
MOVED_NAMES: Mapping[tuple[str, str], str] = {
    ("chatfmt.parsing.pythonic", "LFM2Parser"): "chatfmt.families.lfm.parser",
    ("chatfmt.parsing.invoke", "MiniMaxM2Parser"): "chatfmt.families.minimax.parser",
    ("chatfmt.parsing.invoke", "MiniMaxM3Parser"): "chatfmt.families.minimax.parser",
    ("chatfmt.parsing.invoke", "MM3_NS"): "chatfmt.families.minimax.parser",
    ("chatfmt.parsing.invoke", "element_value"): "chatfmt.families.minimax.parser",
    ("chatfmt.parsing.invoke", "DeepSeekDSMLParser"): "chatfmt.families.deepseek.dsml_parser",
    ("chatfmt.parsing.xml_function", "SeedOssParser"): "chatfmt.families.seed.parser",
    ("chatfmt.parsing.xml_function", "SeedThinkParser"): "chatfmt.families.seed.parser",
    ("chatfmt.families.granite.parser", "Phi4Parser"): "chatfmt.families.phi.parser",
}


def moved_name(module: str, name: str) -> Any:
    """A name that moved out of ``module`` (for that module's ``__getattr__``), with a warning."""
    new = MOVED_NAMES.get((module, name))
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} moved to {new}.{name} (the old place goes away in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(new), name)


#: Old packages that are now empty: importing one gives a stand-in holding only its old
#: submodules (found through :data:`MOVED`).
OLD_PACKAGES: Mapping[str, str] = {"chatfmt.formats": "chatfmt.families"}


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module that replaced it (or an old package's stand-in)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        if self.old in OLD_PACKAGES:
            return None  # a fresh, empty package module
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        if self.spec is not None:
            module.__spec__ = self.spec  # importlib gave the shared module the old path's spec
        else:
            from .families import builtin_templates

            module.builtin_templates = builtin_templates  # type: ignore[attr-defined]
        warnings.warn(
            f"{self.old} is an old module path; import {self.new} instead "
            "(the old path goes away in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )


class MovedModules(importlib.abc.MetaPathFinder):
    """Finds the old module paths listed in :data:`MOVED`."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname) or OLD_PACKAGES.get(fullname)
        if new is None:
            return None
        spec = importlib.machinery.ModuleSpec(
            fullname, _Alias(fullname, new), is_package=fullname in OLD_PACKAGES
        )
        if fullname in OLD_PACKAGES:
            spec.submodule_search_locations = []
        return spec


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
