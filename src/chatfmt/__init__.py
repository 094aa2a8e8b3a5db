"""chatfmt: exact, fast and injection-safe LLM chat formats."""

import typing

from . import _moved
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
from .parsing import ParsedMessage, StreamParser, merge_deltas, parse
from .protocol import Conversation, Message, Tool, ToolCall, validate_conversation
from .registry import REGISTRY, register
from .requests import ParseRequest, RenderRequest
from .segments import Kind, Segment
from .spec import RoleFormat, SpecTemplate, TemplateSpec, load_spec_file
from .template import RenderContext, Template
from .tool_format import ToolFormat, with_tool_format, with_tool_parser

_moved.install()  # old module paths (chatfmt.formats.*, chatfmt.parsing.<family>) still import

if typing.TYPE_CHECKING:
    from .tokens import Encoding, encode, encode_batch, load_tokenizer

__version__ = "0.1.0"

#: Token-level API, imported on first use (it needs the ``tokenizers`` extra: numpy & co).
_LAZY = {"Encoding", "encode", "encode_batch", "load_tokenizer"}


def __getattr__(name: str) -> typing.Any:
    if name in _LAZY:
        from . import tokens

        return getattr(tokens, name)
    raise AttributeError(f"module 'chatfmt' has no attribute {name!r}")


__all__ = [
    "REGISTRY",
    "ChatFmtError",
    "Conversation",
    "Encoding",
    "GenerationConfig",
    "Kind",
    "Message",
    "ParseError",
    "ParseRequest",
    "ParsedMessage",
    "RenderContext",
    "RenderRequest",
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
    "ToolFormat",
    "UnsupportedFeatureError",
    "ValidationError",
    "__version__",
    "encode",
    "encode_batch",
    "get_template",
    "list_templates",
    "load_spec_file",
    "load_tokenizer",
    "merge_deltas",
    "parse",
    "register",
    "render",
    "render_segments",
    "validate_conversation",
    "with_tool_format",
    "with_tool_parser",
]
