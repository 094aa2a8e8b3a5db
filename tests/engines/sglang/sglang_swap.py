"""pytest plugin: with ``CHATFMT_SWAP=1``, SGLang's built-in detectors are chatfmt's.

The built-in tool names in SGLang's maps point at chatfmt's detectors (``register(replace=…)``),
and — since SGLang's tests import detector classes directly — the detector modules' class
attributes too, before any test module imports them (reasoning detectors keep SGLang's default
``force_reasoning``; every name of ``ReasoningParser.DetectorMap`` that held a replaced class
gets its replacement). In both passes ``sglang.test.test_utils`` is a light stand-in (below).
"""

import importlib
import os
import sys
import types
import unittest

import cpu_torchvision

cpu_torchvision.declare()

# SGLang's test helpers module imports its benchmark and multimodal stack (torchvision, which
# needs CUDA torch); the parser tests take only CustomTestCase from it. Both passes use this.
_helpers = types.ModuleType("sglang.test.test_utils")
_helpers.CustomTestCase = unittest.TestCase  # type: ignore[attr-defined]
sys.modules.setdefault("sglang.test.test_utils", _helpers)

#: (SGLang module, class) → the chatfmt parser reading the same format.
DETECTOR_CLASSES = {
    ("hermes_detector", "HermesDetector"): "hermes",
    ("qwen25_detector", "Qwen25Detector"): "hermes",
    ("llama32_detector", "Llama32Detector"): "llama3_json",
    ("internlm_detector", "InternlmDetector"): "interns1",
    ("mistral_detector", "MistralDetector"): "mistral",
    ("pythonic_detector", "PythonicDetector"): "pythonic",
    ("qwen3_coder_detector", "Qwen3CoderDetector"): "qwen3_coder",
}

#: SGLang reasoning detector class → (the chatfmt parser reading the same format, SGLang's
#: default ``force_reasoning`` of that class). SGLang's HunyuanDetector reads Hunyuan-A13B's
#: ``<think>``/``<tool_calls>``; chatfmt's ``hunyuan`` is the ``<think:opensource>`` format.
REASONING_CLASSES = {
    "DeepSeekR1Detector": ("deepseek_r1", True),
    "Qwen3Detector": ("qwen3", False),
    "KimiK2Detector": ("kimi_k2", False),
    "Gemma4Detector": ("gemma4", False),
}


def _reasoning_class(name: str, parser: str, force_default: bool) -> type:
    """chatfmt's reasoning detector ``parser`` under SGLang's class ``name`` and default."""
    from chatfmt.integrations.engine_names import EngineParser
    from chatfmt.integrations.sglang import _class_for

    base = _class_for("reasoning", EngineParser(f"chatfmt-{parser}", parser))

    def __init__(self, stream_reasoning=True, force_reasoning=force_default, **kwargs):  # type: ignore[no-untyped-def]
        base.__init__(
            self, stream_reasoning=stream_reasoning, force_reasoning=force_reasoning, **kwargs
        )

    return type(name, (base,), {"__init__": __init__})


if os.environ.get("CHATFMT_SWAP") == "1":
    from chatfmt.integrations.engine_names import EngineParser
    from chatfmt.integrations.sglang import BUILTIN_EQUIVALENTS, _class_for, register

    # built-in tool names → chatfmt; built-in reasoning names get the classes below
    register(replace={"tool": BUILTIN_EQUIVALENTS["tool"]})
    for (module, name), parser in DETECTOR_CLASSES.items():
        found = importlib.import_module(f"sglang.srt.function_call.{module}")
        setattr(found, name, _class_for("tool", EngineParser(f"chatfmt-{parser}", parser)))
    reasoning = importlib.import_module("sglang.srt.parser.reasoning_parser")
    detectors = reasoning.ReasoningParser.DetectorMap
    for name, (parser, force_default) in REASONING_CLASSES.items():
        own = getattr(reasoning, name)
        swapped = _reasoning_class(name, parser, force_default)
        setattr(reasoning, name, swapped)
        for key, cls in list(detectors.items()):
            if cls is own:
                detectors[key] = swapped
