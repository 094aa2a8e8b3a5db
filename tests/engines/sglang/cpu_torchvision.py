"""Let PyPI's torchvision import on CPU torch in the SGLang test venv.

SGLang's serving modules import ``torchvision.transforms`` (multimodal configs); PyPI's
torchvision wheels are CUDA builds whose kernels cannot load with CPU torch, and their import
then registers fake kernels for two operators that no longer exist. Declaring those two
operator schemas first (no kernels: nothing here runs them) lets the import succeed.
"""


def declare() -> None:
    """Declare ``torchvision::nms``/``qnms`` if torchvision's kernels did not (idempotent)."""
    import torch

    global _LIB
    if _LIB is not None or hasattr(torch.ops.torchvision, "nms"):
        return
    _LIB = torch.library.Library("torchvision", "DEF")
    for name in ("nms", "qnms"):
        _LIB.define(f"{name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


_LIB = None
