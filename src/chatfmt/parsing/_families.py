"""Imports every family module so that its parsers are registered."""

from __future__ import annotations

from . import (  # noqa: F401
    chatglm,
    command_r,
    deepseek,
    gemma4,
    granite,
    hermes,
    internlm2,
    jamba,
    llama3,
    mistral,
    nemotron,
    pythonic,
    qwen3_coder,
)
from .reasoning import ThinkParser  # noqa: F401
