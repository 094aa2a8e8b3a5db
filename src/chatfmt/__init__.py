"""chatfmt: exact, fast and injection-safe LLM chat formats."""

from __future__ import annotations

from .api import get_template, list_templates, render, render_segments
from .config import GenerationConfig
from .errors import (
    ChatFmtError,
    ParseError,
    RoleOrderError,
    TemplateError,
    TemplateNotFoundError,
    TemplateRenderError,
    TokenizationError,
    UnsupportedFeatureError,
    ValidationError,
)
from .parsing import StreamParser, merge_deltas, parse
from .protocol import Conversation, Message, Tool, ToolCall, validate_conversation
from .registry import REGISTRY, register
from .segments import Kind, Segment
from .spec import RoleFormat, SpecTemplate, TemplateSpec, load_spec_file
from .template import RenderContext, Template

__version__ = "0.1.0"

__all__ = [
    "REGISTRY",
    "ChatFmtError",
    "Conversation",
    "GenerationConfig",
    "Kind",
    "Message",
    "ParseError",
    "RenderContext",
    "RoleFormat",
    "RoleOrderError",
    "Segment",
    "SpecTemplate",
    "StreamParser",
    "Template",
    "TemplateError",
    "TemplateNotFoundError",
    "TemplateRenderError",
    "TemplateSpec",
    "TokenizationError",
    "Tool",
    "ToolCall",
    "UnsupportedFeatureError",
    "ValidationError",
    "__version__",
    "get_template",
    "list_templates",
    "load_spec_file",
    "merge_deltas",
    "parse",
    "register",
    "render",
    "render_segments",
    "validate_conversation",
]
