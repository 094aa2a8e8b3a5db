"""The agent runtime: tools from Python functions, a code interpreter, and the agent loop."""

from __future__ import annotations

from .tools import FunctionTool, ToolExecutor, ToolOutcome, tool

__all__ = ["FunctionTool", "ToolExecutor", "ToolOutcome", "tool"]
