"""pytest plugin: with ``CHATFMT_SWAP=1``, SGLang's built-in detectors are chatfmt's.

The built-in names in SGLang's maps point at chatfmt's detectors (``register(replace=True)``),
and — since SGLang's tests import detector classes directly — the detector modules' class
attributes too, before any test module imports them. In both passes ``sglang.test.test_utils``
is a light stand-in (see below).
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

if os.environ.get("CHATFMT_SWAP") == "1":
    from chatfmt.integrations.engine_names import EngineParser
    from chatfmt.integrations.sglang import _class_for, register

    register(replace=True)
    for (module, name), parser in DETECTOR_CLASSES.items():
        found = importlib.import_module(f"sglang.srt.function_call.{module}")
        setattr(found, name, _class_for("tool", EngineParser(f"chatfmt-{parser}", parser)))
