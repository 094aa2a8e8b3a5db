"""In the SGLang venv, let torchvision import on CPU torch before any test imports SGLang.

Elsewhere (the main suite, no SGLang) this does nothing and imports nothing heavy.
"""

import importlib.util

if importlib.util.find_spec("sglang") is not None:
    import cpu_torchvision

    cpu_torchvision.declare()
