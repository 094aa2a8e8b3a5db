"""pytest plugin for vLLM's own parser tests (``-p vllm_swap``), used by ``run.py``.

Always: the Hugging Face tokenizer ids the tests name are read from local files
(``CHATFMT_SHARED``/tokenizers); an id with no local tokenizer skips its test with the reason.
With ``CHATFMT_SWAP=1``: before the test modules are imported, every vLLM parser class
that has a chatfmt counterpart is replaced by chatfmt's adapter, in its module and in vLLM's
parser registries, so the tests exercise chatfmt's parsers through vLLM's own interfaces.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(os.environ.get("CHATFMT_SHARED", Path(__file__).parents[4] / "shared"))
TOKENIZERS = SHARED / "tokenizers"

#: Hugging Face id prefix → local tokenizer folder. gpt2 and opt-125m (byte-level BPE,
#: used by tests that only cut text into tokens) are read with Qwen3's byte-level BPE.
LOCAL_TOKENIZERS = {
    "Qwen/Qwen3-": "qwen3",
    "Qwen/Qwen3.5-": "qwen3",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen": "qwen3",
    "meta-llama/Llama-3": "llama3_1",
    "Salesforce/Llama-xLAM-2": "llama3_1",
    "deepseek-ai/DeepSeek-V3": "deepseek_v3",
    "openai-community/gpt2": "qwen3",
    "facebook/opt-125m": "qwen3",
}

#: vLLM parser name → chatfmt parser name, where they differ (the rest: the same name).
TOOL_ALIASES = {"qwen3_json": "hermes", "glm47": "glm45", "llama4_json": "llama3_json"}
REASONING_ALIASES = {"step5": "deepseek_r1"}


def local_tokenizer(name: Any) -> Path | None:
    """The local folder for a Hugging Face tokenizer id (``None`` when there is none)."""
    text = str(name)
    if Path(text).exists():
        return Path(text)
    for prefix, folder in LOCAL_TOKENIZERS.items():
        if text.startswith(prefix):
            path = TOKENIZERS / folder
            return path if path.exists() else None
    return None


def _map(name: Any) -> str:
    path = local_tokenizer(name)
    if path is None:
        pytest.skip(f"no local tokenizer for {name!r} (tests run offline)", allow_module_level=True)
    return str(path)


_LOADED: dict[Any, Any] = {}


def _patch_tokenizers() -> None:
    import transformers
    import vllm.tokenizers as vt

    auto = transformers.AutoTokenizer.from_pretrained.__func__  # type: ignore[attr-defined]

    def from_pretrained(cls: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        key = ("auto", _map(name), args, repr(sorted(kwargs.items())))
        if key not in _LOADED:  # the tests load the same tokenizer per test: read it once
            _LOADED[key] = auto(cls, key[1], *args, **kwargs)
        return _LOADED[key]

    transformers.AutoTokenizer.from_pretrained = classmethod(from_pretrained)  # type: ignore[assignment]
    original = vt.get_tokenizer

    def get_tokenizer(tokenizer_name: Any = None, *args: Any, **kwargs: Any) -> Any:
        key = ("vllm", _map(tokenizer_name), args, repr(sorted(kwargs.items())))
        if key not in _LOADED:
            _LOADED[key] = original(key[1], *args, **kwargs)
        return _LOADED[key]

    vt.get_tokenizer = get_tokenizer
    for mod in ("vllm.tokenizers.registry",):
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        if hasattr(m, "get_tokenizer"):
            m.get_tokenizer = get_tokenizer


#: (vLLM module, class) → what replaced it, for the report.
SWAPPED: dict[tuple[str, str], str] = {}
#: (vLLM module, class) → chatfmt's adapter under vLLM's class name.
REPLACEMENTS: dict[tuple[str, str], Any] = {}


def _swap_parsers() -> None:
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    import chatfmt.integrations.vllm as cv
    from chatfmt.parsing import REASONING_PARSERS, TOOL_PARSERS

    for manager, table, aliases, make, registry in (
        (ToolParserManager, TOOL_PARSERS, TOOL_ALIASES, cv.tool_parser_class, "tool_parsers"),
        (
            ReasoningParserManager,
            REASONING_PARSERS,
            REASONING_ALIASES,
            cv.reasoning_parser_class,
            "reasoning_parsers",
        ),
    ):
        eager: dict[str, Any] = getattr(manager, registry)
        # vLLM's parser modules first, so that a vLLM parser built on another (LongCat on
        # Hermes) keeps vLLM's base class; then the replacements
        for module_path, _ in set(manager.lazy_parsers.values()):
            try:
                importlib.import_module(module_path)
            except Exception:  # a module that does not import here: its tests fail in both passes
                continue
        for name, (module_path, class_name) in sorted(manager.lazy_parsers.items()):
            target = aliases.get(name, name)
            if target not in table:
                continue
            key = (module_path, class_name)
            cls = REPLACEMENTS.get(key)
            if cls is None:  # named as vLLM's class, so that test ids stay the same
                cls = REPLACEMENTS[key] = type(class_name, (make(target),), {})
            eager[name] = cls
            if key in SWAPPED:
                continue
            try:
                module = importlib.import_module(module_path)
            except Exception:  # a vLLM parser module that does not import here: keep its name only
                continue
            setattr(module, class_name, cls)
            SWAPPED[key] = f"chatfmt-{target}"


def pytest_configure(config: pytest.Config) -> None:
    _patch_tokenizers()
    if os.environ.get("CHATFMT_SWAP") == "1":
        _swap_parsers()


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not SWAPPED:
        return ["vLLM's own parsers"]
    return [f"chatfmt adapters replace {len(SWAPPED)} vLLM parser classes"]
