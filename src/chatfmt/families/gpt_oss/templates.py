"""OpenAI gpt-oss: the Harmony format (``openai-gpt-oss-120b.jinja``, also gpt-oss-20b).

Every message is ``<|start|>{header}<|message|>{body}<|end|>``. The system message
(model identity, knowledge cutoff, date, ``Reasoning: {effort}``, built-in tools,
valid channels) is written by the template; the caller's system/developer message
becomes the developer message (``# Instructions``) together with the tools, listed
as a TypeScript-like ``namespace functions``. Assistant replies are on the
``final`` channel; the reasoning (``reasoning_content``, the template's
``thinking``) of the last reply is an ``analysis`` message when the conversation
ends with that reply (training) and dropped otherwise; a tool call is
``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{args}<|call|>``
preceded by its analysis (its text or reasoning) unless a later final reply
exists, and the tool's answer comes from ``functions.NAME`` as a JSON string. Once a later
final reply exists, the text of a tool-call message (which the official file drops with the
analysis) is the call's commentary-channel preamble, as openai-harmony renders it
(``strict_history=True`` refuses it instead).

Refused (the official template would drop them silently): a system message after
the first message, more than one tool call in a message, code-interpreter calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import UnsupportedFeatureError, ValidationError
from ...history_rules import HistoryRules, Shown
from ...protocol import Conversation, Message, Tool
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template, text_beside_calls
from ..chatml.markers import ENDOFTEXT
from ..chatml.render import require_messages, require_text, tojson
from .markers import CALL, CHANNEL, CONSTRAIN, END, MESSAGE, RETURN, START
from .parser import HarmonyParser

CONTROL_TOKENS = (START, END, MESSAGE, CHANNEL, CONSTRAIN, RETURN, CALL, ENDOFTEXT)

DEFAULT_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
_CHANNELS = (
    "# Valid channels: analysis, commentary, final. Channel must be included for every message."
)
_FUNCTIONS_NOTE = "\nCalls to these tools must go to the commentary channel: 'functions'."
_ASSISTANT = START + "assistant"
_FINAL = CHANNEL + "final" + MESSAGE
_ANALYSIS = CHANNEL + "analysis" + MESSAGE
_COMMENTARY = CHANNEL + "commentary" + MESSAGE
_FORBIDDEN = (_ANALYSIS, _FINAL)

_BROWSER = (
    "## browser\n\n"
    "// Tool for browsing.\n"
    "// The `cursor` appears in brackets before each browsing display: `[{cursor}]`.\n"
    "// Cite information from the tool using the following format:\n"
    "// `【{cursor}†L{line_start}(-L{line_end})?】`, for example: `【6†L9-L11】` or `【8†L3】`.\n"
    "// Do not quote more than 10 words directly from the tool output.\n"
    "// sources=web (default: web)\n"
    "namespace browser {\n\n"
    "// Searches for information related to `query` and displays `topn` results.\n"
    "type search = (_: {\n"
    "query: string,\n"
    "topn?: number, // default: 10\n"
    "source?: string,\n"
    "}) => any;\n\n"
    "// Opens the link `id` from the page indicated by `cursor` starting at line number `loc`, "
    "showing `num_lines` lines.\n"
    "// Valid link ids are displayed with the formatting: `【{id}†.*】`.\n"
    "// If `cursor` is not provided, the most recent page is implied.\n"
    "// If `id` is a string, it is treated as a fully qualified URL associated with `source`.\n"
    "// If `loc` is not provided, the viewport will be positioned at the beginning of the "
    "document or centered on the most relevant passage, if available.\n"
    "// Use this function without `id` to scroll to a new location of an opened page.\n"
    "type open = (_: {\n"
    "id?: number | string, // default: -1\n"
    "cursor?: number, // default: -1\n"
    "loc?: number, // default: -1\n"
    "num_lines?: number, // default: -1\n"
    "view_source?: boolean, // default: false\n"
    "source?: string,\n"
    "}) => any;\n\n"
    "// Finds exact matches of `pattern` in the current page, or the page given by `cursor`.\n"
    "type find = (_: {\n"
    "pattern: string,\n"
    "cursor?: number, // default: -1\n"
    "}) => any;\n\n"
    "} // namespace browser\n\n"
)
_PYTHON = (
    "## python\n\n"
    "Use this tool to execute Python code in your chain of thought. The code will not be shown "
    "to the user. This tool should be used for internal reasoning, but not for code that is "
    "intended to be visible to the user (e.g. when creating plots, tables, or files).\n\n"
    "When you send a message containing Python code to python, it will be executed in a "
    "stateful Jupyter notebook environment. python will respond with the output of the "
    "execution or time out after 120.0 seconds. The drive at '/mnt/data' can be used to save "
    "and persist user files. Internet access for this session is UNKNOWN. Depends on the "
    "cluster.\n\n"
)

_MISSING = object()
#: What the template writes between ``name: `` and a nested property's type (its own indentation).
_NESTED_GAP = "\n" + " " * 16
#: What it writes before a ``oneOf`` variant's ``// default:`` comment.
_DEFAULT_GAP = " " * 20


def _get(value: Any, key: str) -> Any:
    """Jinja's ``value.key`` on JSON data: the item, or ``_MISSING`` (undefined)."""
    if isinstance(value, Mapping):
        return value.get(key, _MISSING)
    return _MISSING


def _truthy(value: Any) -> bool:
    return value is not _MISSING and bool(value)


def _text(value: Any, where: str) -> str:
    """A schema string the template concatenates (anything else fails there)."""
    if not isinstance(value, str):
        raise ValidationError(
            f"template 'gpt-oss' needs a string here, got {type(value).__name__}", field=where
        )
    return value


def _str(value: Any) -> str:
    """How Jinja prints a value (``str``)."""
    return str(value)


def ts_type(spec: Any, required: Any, where: str) -> str:
    """The template's ``render_typescript_type``: a JSON schema as a TypeScript-like type."""
    kind = _get(spec, "type")
    if kind == "array":
        items = spec.get("items", _MISSING)
        if _truthy(items):
            item_kind = _get(items, "type")
            if item_kind == "string":
                out = "string[]"
            elif item_kind in ("number", "integer"):
                out = "number[]"
            elif item_kind == "boolean":
                out = "boolean[]"
            else:
                inner = ts_type(items, required, where + ".items")
                out = "any[]" if inner == "object | object" or len(inner) > 50 else inner + "[]"
        else:
            out = "any[]"
        return out + " | null" if _truthy(_get(spec, "nullable")) else out
    if isinstance(kind, list) and kind:
        return " | ".join(map(_str, kind)) if len(kind) > 1 else _str(kind[0])
    one_of = _get(spec, "oneOf")
    if _truthy(one_of):
        # The template's "any" for unions with object variants never triggers: its flag is
        # set inside a for loop, where Jinja scopes it to the loop.
        variants = list(one_of)
        parts = []
        for i, variant in enumerate(variants):
            part = ts_type(variant, required, f"{where}.oneOf[{i}]")
            description = _get(variant, "description")
            if _truthy(description):
                part += "// " + _text(description, f"{where}.oneOf[{i}].description")
            default = _get(variant, "default")
            if default is not _MISSING:
                part += _DEFAULT_GAP + "// default: " + tojson(default, where)
            if i < len(variants) - 1:
                part += " | \n"
            parts.append(part)
        return "".join(parts)
    if kind == "string":
        enum = _get(spec, "enum")
        if _truthy(enum):
            return '"' + '" | "'.join(map(_str, enum)) + '"'
        return "string | null" if _truthy(_get(spec, "nullable")) else "string"
    if kind in ("number", "integer"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "object":
        props = _get(spec, "properties")
        if not _truthy(props):
            return "object"
        if not isinstance(props, Mapping):
            raise ValidationError(
                "template 'gpt-oss' needs properties as an object", field=where + ".properties"
            )
        inner_required = _get(spec, "required")
        inner_required = inner_required if _truthy(inner_required) else []
        fields = [
            str(name)
            + ("?" if name not in inner_required else "")
            + ": "
            + _NESTED_GAP
            + ts_type(prop, inner_required, f"{where}.properties.{name}")
            for name, prop in props.items()
        ]
        return "{\n" + ", ".join(fields) + "}"
    return "any"


def _tool_text(tool: Tool) -> str:
    """One function of ``namespace functions``."""
    where = f"tools[{tool.index}].function"
    fn = tool.raw.get("function") if tool.type == "function" else None
    if not isinstance(fn, Mapping):
        raise UnsupportedFeatureError(
            "template 'gpt-oss' lists function tools only", field=f"tools[{tool.index}]"
        )
    out = "// " + _text(fn.get("description"), where + ".description") + "\n"
    out += "type " + _text(fn.get("name"), where + ".name") + " = "
    params = fn.get("parameters")
    props = _get(params, "properties")
    if not (_truthy(params) and _truthy(props)):
        return out + "() => any;\n\n"
    if not isinstance(props, Mapping):
        raise ValidationError(
            "template 'gpt-oss' needs properties as an object", field=where + ".parameters"
        )
    required = _get(params, "required")
    required = required if _truthy(required) else []
    out += "(_: {\n"
    for name, spec in props.items():
        at = f"{where}.parameters.properties.{name}"
        description = _get(spec, "description")
        if _truthy(description):
            out += "// " + _text(description, at + ".description") + "\n"
        out += str(name) + ("?" if name not in required else "") + ": "
        out += ts_type(spec, required, at)
        default = _get(spec, "default")
        if default is not _MISSING:
            if _truthy(_get(spec, "enum")):
                out += ", // default: " + _text(default, at + ".default")
            elif _truthy(_get(spec, "oneOf")):
                out += "// default: " + _text(default, at + ".default")
            else:
                out += ", // default: " + tojson(default, at + ".default")
        out += ",\n"
    return out + "}) => any;\n\n"


def tools_namespace(tools: Sequence[Tool]) -> str:
    """``# Tools`` of the developer message: the ``functions`` namespace."""
    body = "".join(_tool_text(t) for t in tools)
    return (
        "# Tools\n\n## functions\n\nnamespace functions {\n\n" + body + "} // namespace functions"
    )


def _check_channels(m: Message, text: str | None, field: str) -> None:
    """The official template refuses channel markup inside a reply's text or reasoning."""
    if text and any(f in text for f in _FORBIDDEN):
        raise ValidationError(
            "template 'gpt-oss' refuses <|channel|> tags in a reply: give the analysis in "
            "reasoning_content and the final answer in content",
            index=m.index,
            field=field,
        )


class GptOssTemplate(Template):
    """gpt-oss (Harmony), byte for byte the official template (see module doc)."""

    name = "gpt-oss"
    history = HistoryRules(reasoning=Shown.PENDING_CALL)
    aliases = ("gpt_oss", "gptoss", "harmony-chat")
    model_ids = ("openai/gpt-oss-120b", "openai/gpt-oss-20b")
    model_patterns = (r"gpt-oss",)
    description = (
        "OpenAI gpt-oss (Harmony): system/developer messages, analysis/commentary/final "
        "channels, tools as a TypeScript namespace; options reasoning_effort, model_identity, "
        "builtin_tools."
    )
    source = "official Jinja: openai-gpt-oss-120b.jinja"
    official_templates = ("openai-gpt-oss-120b.jinja",)
    control_tokens = CONTROL_TOKENS
    supports_tools = True
    supports_reasoning = True
    tool_parser_class = HarmonyParser
    default_options: ClassVar[Mapping[str, Any]] = {
        "reasoning_effort": "medium",
        "model_identity": DEFAULT_IDENTITY,
        "builtin_tools": (),
    }
    generation_config = GenerationConfig(
        session_len=131072,
        stop_words=(RETURN, CALL, ENDOFTEXT),
        tool_stop_words=(CALL,),
        temperature=1.0,
        top_p=1.0,
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        require_messages(self.name, conv)
        msgs = conv.messages
        b = ctx.builder()
        b.control(START + "system" + MESSAGE)
        b.control(self._system_text(conv, ctx))
        b.control(END)
        first = msgs[0]
        loop = msgs[1:] if first.role == "system" else msgs
        developer = first.content if first.role == "system" else ""
        if developer or conv.tools:
            b.control(START + "developer" + MESSAGE, first.index if developer else None)
            if developer:
                b.control("# Instructions\n\n", first.index)
                b.content(developer, first.index)
                b.control("\n\n", first.index)
            if conv.tools:
                b.control(tools_namespace(conv.tools))
            b.control(END)
        last_call: str | None = None
        for pos, m in enumerate(loop):
            if m.role == "assistant":
                last_call = self._assistant(b, loop, pos, ctx, last_call)
            elif m.role == "tool":
                if last_call is None:
                    raise ValidationError(
                        "template 'gpt-oss': a tool message needs an earlier assistant tool call",
                        index=m.index,
                        field="role",
                    )
                b.control(START + "functions.", m.index)
                b.content(last_call, m.index)
                b.control(" to=assistant" + CHANNEL + "commentary" + MESSAGE, m.index)
                b.content(tojson(m.content, f"messages[{m.index}].content"), m.index)
                b.control(END, m.index)
            elif m.role == "user":
                b.turn(START + "user" + MESSAGE, require_text(self.name, m), END, "", m.index)
            else:
                raise UnsupportedFeatureError(
                    "template 'gpt-oss' takes a system message only as the first message",
                    index=m.index,
                    field="role",
                )
        if ctx.add_generation_prompt:
            b.control(_ASSISTANT)
        return b.segments

    def _system_text(self, conv: Conversation, ctx: RenderContext) -> str:
        identity = ctx.option("model_identity", DEFAULT_IDENTITY)
        effort = ctx.option("reasoning_effort", "medium")
        for key, value in (("model_identity", identity), ("reasoning_effort", effort)):
            if not isinstance(value, str):
                raise ValidationError(
                    f"template 'gpt-oss' option {key} must be a string", field=key
                )
        text = (
            identity
            + "\nKnowledge cutoff: 2024-06\nCurrent date: "
            + ctx.now.strftime("%Y-%m-%d")
            + "\n\nReasoning: "
            + effort
            + "\n\n"
        )
        builtin = ctx.option("builtin_tools")
        if builtin:
            try:
                names = list(builtin)
            except TypeError:
                raise ValidationError(
                    "template 'gpt-oss' option builtin_tools must be a list such as "
                    f"['browser', 'python'], got {type(builtin).__name__}",
                    field="builtin_tools",
                ) from None
            text += "# Tools\n\n"
            text += _BROWSER if "browser" in names else ""
            text += _PYTHON if "python" in names else ""
        text += _CHANNELS
        if conv.tools:
            text += _FUNCTIONS_NOTE
        return text

    def _assistant(
        self,
        b: SegmentBuilder,
        msgs: Sequence[Message],
        pos: int,
        ctx: RenderContext,
        last_call: str | None,
    ) -> str | None:
        """Render assistant message ``msgs[pos]``; returns the tool name later results answer."""
        m = msgs[pos]
        i = m.index
        _check_channels(m, m.content, "content")
        _check_channels(m, m.reasoning_content, "reasoning_content")
        if m.tool_calls:
            if len(m.tool_calls) > 1:
                raise UnsupportedFeatureError(
                    "template 'gpt-oss' renders one tool call per assistant message; "
                    "split parallel calls into consecutive messages",
                    index=i,
                    field="tool_calls[1]",
                )
            call = m.tool_calls[0]
            if call.is_code:
                raise UnsupportedFeatureError(
                    "template 'gpt-oss' has no code-interpreter call format",
                    index=i,
                    field="tool_calls[0]",
                )
            later_final = any(x.role == "assistant" and not x.tool_calls for x in msgs[pos + 1 :])
            if m.content and m.reasoning_content:
                raise ValidationError(
                    "template 'gpt-oss' takes either content or reasoning_content with a tool "
                    "call (both are its analysis message), not both",
                    index=i,
                    field="reasoning_content",
                )
            analysis = m.content or m.reasoning_content
            b.control(_ASSISTANT, i)
            if analysis and not later_final:
                b.control(_ANALYSIS, i, True)
                b.content(analysis, i, True)
                b.control(END + _ASSISTANT, i, True)
            elif later_final and text_beside_calls(self.name, m, ctx, dropped="content"):
                # The official file drops the text once a final reply follows (as all
                # analysis); Harmony's place for text beside a call is a commentary-channel
                # preamble, which stays: written as openai-harmony renders one.
                b.control(_COMMENTARY, i, True)
                b.content(m.text, i, True)
                b.control(END + _ASSISTANT, i, True)
            b.control(" to=functions.", i, True)
            b.content(call.name, i, True)
            b.control(CHANNEL + "commentary json" + MESSAGE, i, True)
            b.content(tojson(call.arguments, f"messages[{i}].tool_calls[0]"), i, True)
            b.control(CALL, i, True)
            return call.name
        content = require_text(self.name, m)
        b.control(_ASSISTANT, i)
        if pos == len(msgs) - 1 and not ctx.add_generation_prompt:
            if m.reasoning_content is not None:
                b.control(_ANALYSIS, i, True)
                b.content(m.reasoning_content, i, True)
                b.control(END + _ASSISTANT, i, True)
            b.control(_FINAL, i, True)
            b.content(content, i, True)
            b.control(RETURN, i, True)
            return last_call
        b.control(_FINAL, i, True)
        b.content(content, i, True)
        b.control(END, i, True)
        return None


GPT_OSS = GptOssTemplate()

TEMPLATES: tuple[Template, ...] = (GPT_OSS,)
