"""Imports every family module so that its parsers are registered."""

from __future__ import annotations

from . import (  # noqa: F401
    chatglm,
    command_r,
    deepseek,
    fireworks,
    functionary,
    granite,
    hermes,
    internlm2,
    kimi,
    kimi_k3,
    llama3,
    mistral,
)
from .reasoning import ThinkParser  # noqa: F401
