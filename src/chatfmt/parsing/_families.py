"""Imports every family module so that its parsers are registered."""

from __future__ import annotations

from . import (  # noqa: F401
    chatglm,
    command_r,
    deepseek,
    granite,
    hermes,
    internlm2,
    llama3,
    mistral,
    nemotron,
    qwen3_coder,
)
from .reasoning import ThinkParser  # noqa: F401
