"""Imports every family module so that its parsers are registered."""

from __future__ import annotations

from . import (  # noqa: F401
    apertus,
    apriel,
    chatglm,
    command_r,
    deepseek,
    fireworks,
    functionary,
    gemma4,
    gigachat,
    glimmer,
    granite,
    harmony,
    hermes,
    hunyuan,
    internlm2,
    invoke,
    jamba,
    kimi,
    kimi_k3,
    llama3,
    minicpm,
    minimax,
    mistral,
    nemotron,
    pythonic,
    qwen3_coder,
    solar,
)
from .reasoning import ThinkParser  # noqa: F401
