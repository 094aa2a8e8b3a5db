"""Imports every family module so that its parsers are registered."""

from __future__ import annotations

from . import (  # noqa: F401
    chatglm,
    command_r,
    deepseek,
    glimmer,
    granite,
    hermes,
    internlm2,
    invoke,
    llama3,
    minimax,
    mistral,
)
from .reasoning import ThinkParser  # noqa: F401
