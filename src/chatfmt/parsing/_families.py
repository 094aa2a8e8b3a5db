"""Imports every family module so that its parsers are registered."""

from __future__ import annotations

from . import chatglm, command_r, deepseek, granite, hermes, internlm2, llama3, mistral  # noqa: F401
from .reasoning import ThinkParser  # noqa: F401
