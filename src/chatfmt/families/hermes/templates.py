"""NousResearch Hermes 2 Pro (Llama 3) / Hermes 3: ChatML, with the official ``tool_use`` template for tools.

Like transformers, which picks a model's ``tool_use`` template when tools are given and its
``default`` template otherwise, these render the plain ChatML ``default`` format without
tools and the ``tool_use`` format (a function-calling system prompt listing the tools with
Python-style signatures) when tools are given — or when the conversation already holds tool
calls or tool results, whose format only the ``tool_use`` template defines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import UnsupportedFeatureError
from ...protocol import Conversation, Message, Tool
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template, text_beside_calls
from ..chatml.markers import IM_END, IM_START
from ..chatml.render import chatml_turn, function_call, require_text, tojson
from .markers import BEGIN_OF_TEXT, END_OF_TEXT
from .parser import HermesParser

BOS = BEGIN_OF_TEXT

_SYSTEM_INTRO = (
    "You are a function calling AI model. You are provided with function signatures within "
    "<tools></tools> XML tags. You may call one or more functions to assist with the user query. "
    "Don't make assumptions about what values to plug into functions. Here are the available "
    "tools: <tools> "
)
_SYSTEM_OUTRO = (
    " </tools>Use the following pydantic model json schema for each tool call you will make: "
    '{"properties": {"name": {"title": "Name", "type": "string"}, "arguments": {"title": '
    '"Arguments", "type": "object"}}, "required": ["name", "arguments"], "title": '
    '"FunctionCall", "type": "object"}}\n'
    "For each function call return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags as follows:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-dict>}\n</tool_call>' + IM_END + "\n"
)
_BASIC_TYPES = {"string": "str", "number": "float", "integer": "int", "boolean": "bool"}
_MISSING = object()


class _Unsupported(Exception):
    """A tool schema the official template cannot render (it recurses forever or fails)."""


def python_type(spec: Any, depth: int = 0) -> str:
    """The template's ``json_to_python_type`` macro, including its quirks.

    ``items`` of an array is never read (the macro passes an iterator), so arrays become
    ``list[Union[]]``; a missing ``type`` is "iterable" in Jinja and gives ``Union[]``.
    """
    if depth > 50:
        raise _Unsupported("schema nesting too deep")
    jtype = spec.get("type", _MISSING) if isinstance(spec, Mapping) else _MISSING
    if isinstance(jtype, str) and jtype in _BASIC_TYPES:
        return _BASIC_TYPES[jtype]
    if jtype == "array":
        return "list[" + python_type(None, depth + 1) + "]"
    if jtype == "object":
        assert isinstance(spec, Mapping)
        if "additionalProperties" in spec:
            return "dict[str, " + python_type(spec["additionalProperties"], depth + 1) + "]"
        return "dict"
    if jtype is _MISSING:
        return "Union[]"
    if isinstance(jtype, str):
        # Jinja iterates the string's characters, each of which recurses forever.
        raise _Unsupported(f"JSON-schema type {jtype!r}")
    if isinstance(jtype, (list, tuple, Mapping)):
        return "Union[" + ",".join(python_type({"type": t}, depth + 1) for t in jtype) + "]"
    return "Any"


def _text(value: Any) -> str:
    """Jinja's string form of a scalar used with ``+`` (strings only; others fail there)."""
    if isinstance(value, str):
        return value
    raise _Unsupported(f"expected a string, got {type(value).__name__}")


def tool_signature(tool: Tool) -> str:
    """One tool entry of the ``tool_use`` system prompt (without the separating newline)."""
    fn: Any = tool.raw.get("function", tool.raw)
    if not isinstance(fn, Mapping):
        raise _Unsupported("tool without a function object")
    if "parameters" not in fn:
        raise _Unsupported("the template needs 'parameters'")
    if "description" not in fn:
        raise _Unsupported("the template needs a 'description'")
    params = fn["parameters"]
    props = params.get("properties", {}) if isinstance(params, Mapping) else {}
    if not isinstance(props, Mapping):
        raise _Unsupported("'parameters.properties' must be an object")
    name = _text(fn.get("name"))
    out = ['{"type": "function", "function": {"name": "', name, '", "description": "', name, "("]
    out.append(", ".join(f"{_text(k)}: {python_type(v)}" for k, v in props.items()))
    out.append(")")
    ret = fn.get("return", _MISSING)
    if ret is not _MISSING:
        out.append(" -> " + python_type(ret))
    out.append(" - " + _text(fn["description"]) + "\n\n")
    for pos, (k, v) in enumerate(props.items()):
        if pos == 0:
            out.append("    Args:\n")
        desc = str(v.get("description", "")) if isinstance(v, Mapping) else ""
        out.append(f"        {k}({python_type(v)}): {desc.strip()}")
    if isinstance(ret, Mapping) and "description" in ret:
        out.append("\n    Returns:\n        " + _text(ret["description"]))
    out.append('", "parameters": ')
    out.append("{}" if not props else tojson(params))
    out.append("}")
    return "".join(out)


class HermesTemplate(Template):
    """Hermes 2 Pro / Hermes 3 (Llama 3 based, ChatML turns, ``<tool_call>`` JSON calls)."""

    control_tokens = (BOS, IM_START, IM_END, END_OF_TEXT)
    supports_tools = True
    tool_parser_class = HermesParser
    #: System turn the ``default`` template writes when the first message is not a system one.
    default_system: ClassVar[str | None] = None
    default_options: ClassVar[Mapping[str, Any]] = {}

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        b.control(BOS)
        uses_tools = any(m.tool_calls or m.role == "tool" for m in conv.messages)
        if conv.tools or uses_tools:
            self._tool_use(b, conv, ctx)
        else:
            self._default(b, conv)
        if ctx.add_generation_prompt:
            b.control(f"{IM_START}assistant\n")
        return b.segments

    def _default(self, b: SegmentBuilder, conv: Conversation) -> None:
        msgs = conv.messages
        if msgs and msgs[0].role != "system" and self.default_system is not None:
            b.control(f"{IM_START}system\n{self.default_system}{IM_END}\n")
        for m in msgs:
            chatml_turn(b, m.role, require_text(self.name, m), m.index, m.role == "assistant")

    def _tool_use(self, b: SegmentBuilder, conv: Conversation, ctx: RenderContext) -> None:
        b.control(f"{IM_START}system\n{_SYSTEM_INTRO}")
        for i, tool in enumerate(conv.tools):
            try:
                b.content(tool_signature(tool))
            except _Unsupported as exc:
                raise UnsupportedFeatureError(
                    f"template {self.name!r} cannot list this tool: {exc}", field=f"tools[{i}]"
                ) from None
            if i < len(conv.tools) - 1:
                b.control("\n")
        b.control(_SYSTEM_OUTRO)
        msgs = conv.messages
        for pos, m in enumerate(msgs):
            if m.role == "assistant" and m.tool_calls:
                self._calls(b, m, ctx)
            elif m.role == "tool":
                self._tool_result(b, msgs, pos)
            else:
                chatml_turn(b, m.role, require_text(self.name, m), m.index, m.role == "assistant")

    def _calls(self, b: SegmentBuilder, m: Message, ctx: RenderContext) -> None:
        # The official tool_use template drops the content of a message with tool calls:
        # chatfmt writes it as the model does, before the calls (refused with strict_history).
        text = text_beside_calls(self.name, m, ctx, dropped="content")
        b.control(f"{IM_START}assistant\n", m.index)
        if text:
            b.content(m.text, m.index, True)
        for j, call in enumerate(m.tool_calls):
            call = function_call(self.name, m, call, j)
            b.control(("\n" if j else "") + '<tool_call>\n{"name": "', m.index, True)
            b.content(call.name, m.index, True)
            b.control('", "arguments": ', m.index, True)
            b.content(call.arguments_json, m.index, True)
            b.control("}\n</tool_call>", m.index, True)
        b.control(IM_END, m.index, True)
        b.control("\n", m.index)

    def _tool_result(self, b: SegmentBuilder, msgs: Sequence[Message], pos: int) -> None:
        m = msgs[pos]
        last = pos == len(msgs) - 1
        if pos > 0 and msgs[pos - 1].role != "tool":
            b.control(f"{IM_START}tool\n", m.index)
        b.turn(
            "<tool_response>\n",
            require_text(self.name, m),
            "\n</tool_response>" + ("" if last else "\n"),
            "",
            m.index,
        )
        if last or msgs[pos + 1].role != "tool":
            b.control(IM_END, m.index)


class Hermes2ProTemplate(HermesTemplate):
    """NousResearch Hermes 2 Pro (Llama 3)."""

    name = "hermes2-pro"
    aliases = ("hermes-2-pro", "hermes2pro", "hermes2_pro", "nous-hermes-2-pro")
    model_ids = ("NousResearch/Hermes-2-Pro-Llama-3-8B", "NousResearch/Hermes-2-Pro-Llama-3-70B")
    model_patterns = (r"hermes-2-pro-llama-3",)
    description = (
        "Hermes 2 Pro: <|begin_of_text|> + ChatML; with tools the official tool_use template "
        "(function-calling system prompt, <tool_call> JSON, <tool_response> in tool turns)."
    )
    source = (
        "official Jinja: NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja; default template: "
        "plain ChatML with bos_token (ollama nous-hermes2 GGUF)"
    )
    official_templates = ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",)
    generation_config = GenerationConfig(session_len=8192, stop_words=(IM_END, END_OF_TEXT))


class Hermes3Template(HermesTemplate):
    """NousResearch Hermes 3 (Llama 3.1)."""

    name = "hermes3"
    aliases = ("hermes-3", "hermes_3", "nous-hermes-3")
    model_ids = (
        "NousResearch/Hermes-3-Llama-3.1-8B",
        "NousResearch/Hermes-3-Llama-3.1-70B",
        "NousResearch/Hermes-3-Llama-3.1-405B",
        "NousResearch/Hermes-3-Llama-3.2-3B",
    )
    model_patterns = (r"hermes-3",)
    description = (
        "Hermes 3: <|begin_of_text|> + ChatML with default system 'You are a helpful assistant.'; "
        "with tools the official tool_use template."
    )
    source = (
        "official Jinja: NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja; default template: "
        "ollama hermes3 GGUF"
    )
    default_system = "You are a helpful assistant."
    official_templates = (
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "ollama-hermes3-70b.jinja",
    )
    generation_config = GenerationConfig(session_len=131072, stop_words=(IM_END, END_OF_TEXT))


HERMES2_PRO = Hermes2ProTemplate()
HERMES3 = Hermes3Template()

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (HERMES2_PRO, HERMES3)
