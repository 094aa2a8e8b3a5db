"""The agent runtime: tools from Python functions, a code interpreter, and the agent loop."""

from __future__ import annotations

from .loop import Agent
from .tools import FunctionTool, ToolExecutor, ToolOutcome, tool

__all__ = ["Agent", "FunctionTool", "ToolExecutor", "ToolOutcome", "tool"]
