"""The agent runtime: tools from Python functions, a code interpreter, and the agent loop."""

from __future__ import annotations

from ..errors import InterpreterError
from .events import (
    AgentEvent,
    AgentReturn,
    AgentStep,
    Final,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolResult,
    ToolStart,
)
from .interpreter import CodeInterpreter, ExecutionResult
from .loop import Agent
from .tools import Attachment, FunctionTool, ToolExecutor, ToolOutcome, tool

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentReturn",
    "AgentStep",
    "Attachment",
    "CodeInterpreter",
    "ExecutionResult",
    "Final",
    "FunctionTool",
    "InterpreterError",
    "ReasoningDelta",
    "TextDelta",
    "ToolCallDelta",
    "ToolExecutor",
    "ToolOutcome",
    "ToolResult",
    "ToolStart",
    "tool",
]
