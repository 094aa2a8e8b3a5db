"""Qwen3-Coder and Qwen3.5: ChatML with ``<function=…><parameter=…>`` XML tool calls.

Qwen3-Coder lists the tools as ``<function>`` XML in the system turn; Qwen3.5 lists them
as JSON in ``<tools>`` and thinks in ``<think>…</think>`` (its generation prompt opens
the block unless ``enable_thinking=False``). Both write a call as::

    <tool_call>
    <function=name>
    <parameter=key>
    value
    </parameter>
    </function>
    </tool_call>

with each argument value as text (objects and arrays as JSON, other values as Python
prints them: ``True``, ``None``), parsed back by the ``qwen3_coder`` tool parser. Each
class reproduces its official Jinja template byte for byte (see ``official_templates``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import UnsupportedFeatureError, ValidationError
from ...history_rules import EARLIER_THINKING_DROPPED
from ...parsing.xml_function import Qwen3CoderParser
from ...protocol import Conversation, Message, Tool, ToolCall
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template
from ..chatml.markers import ENDOFTEXT
from .parser import Qwen3ThinkParser
from .templates import (
    IM_END,
    IM_START,
    QWEN_CONTROL_TOKENS,
    function_call,
    require_messages,
    require_text,
    tojson,
)

_STOPS = (IM_END, ENDOFTEXT)
_ASSISTANT = f"{IM_START}assistant\n"


def jinja_str(value: Any) -> str:
    """A JSON value as Jinja's ``|string`` / ``~`` writes it (Python's ``str``)."""
    return value if isinstance(value, str) else str(value)


def _is_list_or_map(value: Any) -> bool:
    """Jinja's ``is mapping or (is sequence and is not string)`` for JSON values."""
    return isinstance(value, (Mapping, list, tuple))


def argument_text(value: Any) -> str:
    """An argument value as the templates write it: JSON for objects and arrays, else ``str``."""
    return tojson(value, "tool_calls") if _is_list_or_map(value) else jinja_str(value)


def call_arguments(template: str, m: Message, call: ToolCall, j: int) -> Mapping[str, Any]:
    """The call's arguments object (the templates iterate its items)."""
    call = function_call(template, m, call, j)
    if not isinstance(call.arguments, Mapping):
        raise ValidationError(
            f"template {template!r} writes each argument as a parameter: arguments must be a "
            "JSON object",
            index=m.index,
            field=f"tool_calls[{j}].function.arguments",
        )
    return call.arguments


def xml_call(b: SegmentBuilder, index: int, name: str, args: Mapping[str, Any], head: str) -> None:
    """``{head}<function=name>\\n`` + one ``<parameter=k>\\nv\\n</parameter>\\n`` per argument
    + ``</function>\\n</tool_call>`` as trained segments."""
    b.control(head + "<tool_call>\n<function=", index, True)
    b.content(name, index, True)
    b.control(">\n", index, True)
    for key, value in args.items():
        b.control("<parameter=", index, True)
        b.content(key, index, True)
        b.control(">\n", index, True)
        b.content(argument_text(value), index, True)
        b.control("\n</parameter>\n", index, True)
    b.control("</function>\n</tool_call>", index, True)


def _no_code_tools(template: str, tools: Sequence[Tool]) -> None:
    for tool in tools:
        if tool.type != "function":
            raise UnsupportedFeatureError(
                f"template {template!r} has no code-interpreter tool format",
                field=f"tools[{tool.index}]",
            )


class Qwen3CoderTemplate(Template):
    """Qwen3-Coder: tools as ``<function>`` XML, no reasoning format."""

    name = "qwen3-coder"
    aliases = ("qwen3_coder", "qwen3-coder-instruct")
    model_ids = (
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8",
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8",
    )
    model_patterns = (r"qwen3-coder",)
    description = (
        "Qwen3-Coder: ChatML, tools listed as <function> XML, calls written "
        "<tool_call><function=name><parameter=k>v</parameter></function></tool_call>."
    )
    source = "official Jinja: Qwen3-Coder.jinja"
    official_templates = ("Qwen3-Coder.jinja",)
    control_tokens = QWEN_CONTROL_TOKENS
    supports_tools = True
    tool_parser_class = Qwen3CoderParser
    default_system: ClassVar[str] = (
        "You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks."
    )
    generation_config = GenerationConfig(
        session_len=262144,
        stop_words=_STOPS,
        temperature=0.7,
        top_p=0.8,
        top_k=20,
        repetition_penalty=1.05,
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        msgs = conv.messages
        if not msgs:
            require_messages(self.name, conv)
        b = ctx.builder()
        first = msgs[0]
        rest = msgs[1:] if first.role == "system" else msgs
        tools = conv.tools
        if first.role == "system":
            b.control(f"{IM_START}system\n")
            b.content(require_text(self.name, first), first.index)
        elif tools:
            b.control(f"{IM_START}system\n{self.default_system}")
        if tools:
            _no_code_tools(self.name, tools)
            self._tools(b, tools)
        if first.role == "system" or tools:
            b.control(IM_END + "\n")
        for pos, m in enumerate(rest):
            role = m.role
            if role == "assistant" and m.tool_calls:
                self._call_turn(b, m)
            elif role == "tool":
                prev = rest[pos - 1].role if pos else None
                nxt = rest[pos + 1].role if pos + 1 < len(rest) else None
                head = f"{IM_START}user\n" if prev is not None and prev != "tool" else ""
                tail = IM_END + "\n" if nxt != "tool" else ""
                b.turn(
                    head + "<tool_response>\n",
                    require_text(self.name, m),
                    "\n</tool_response>\n" + tail,
                    "",
                    m.index,
                )
            else:
                trained = role == "assistant"
                b.turn(
                    f"{IM_START}{role}\n",
                    require_text(self.name, m),
                    IM_END,
                    "\n",
                    m.index,
                    trained,
                )
        if ctx.add_generation_prompt:
            b.control(_ASSISTANT)
        return b.segments

    def _call_turn(self, b: SegmentBuilder, m: Message) -> None:
        """``<|im_start|>assistant[\\n{content}\\n]`` then ``\\n<tool_call>…`` per call."""
        b.control(IM_START + "assistant", m.index)
        text = (m.content or "").strip()
        first = True  # the first newline is the header's (the generation prompt has it)
        if text:
            b.control("\n", m.index)
            b.content(text, m.index, True)
            b.control("\n", m.index, True)
            first = False
        for j, call in enumerate(m.tool_calls):
            args = call_arguments(self.name, m, call, j)
            if first:
                b.control("\n", m.index)
                first = False
                xml_call(b, m.index, call.name, args, "")
            else:
                xml_call(b, m.index, call.name, args, "\n")
        b.control(IM_END, m.index, True)
        b.control("\n", m.index)

    def _tools(self, b: SegmentBuilder, tools: Sequence[Tool]) -> None:
        b.control("\n\n# Tools\n\nYou have access to the following tools:\n\n<tools>")
        for tool in tools:
            fn: Any = tool.raw.get("function") if "function" in tool.raw else tool.raw
            fn = fn if isinstance(fn, Mapping) else {}
            b.control("\n<function>\n<name>")
            b.content(jinja_str(fn.get("name", "")))
            b.control("</name>")
            if "description" in fn:
                b.control("\n<description>")
                b.content(jinja_str(fn["description"]).strip())
                b.control("</description>")
            b.control("\n<parameters>")
            params = fn.get("parameters")
            props = params.get("properties") if isinstance(params, Mapping) else None
            if isinstance(props, Mapping):
                for pname, fields in props.items():
                    b.control("\n<parameter>\n<name>")
                    b.content(jinja_str(pname))
                    b.control("</name>")
                    if isinstance(fields, Mapping):
                        if "type" in fields:
                            b.control("\n<type>")
                            b.content(jinja_str(fields["type"]))
                            b.control("</type>")
                        if "description" in fields:
                            b.control("\n<description>")
                            b.content(jinja_str(fields["description"]).strip())
                            b.control("</description>")
                    extra_keys(b, fields, ("name", "type", "description"))
                    b.control("\n</parameter>")
            extra_keys(b, params, ("type", "properties"))
            b.control("\n</parameters>")
            extra_keys(b, fn, ("type", "name", "description", "parameters"))
            b.control("\n</function>")
        b.control("\n</tools>" + _CODER_OUTRO)


def extra_keys(b: SegmentBuilder, obj: Any, handled: Sequence[str]) -> None:
    """The template's ``render_extra_keys``: ``\\n<key>value</key>`` for every other key."""
    if not isinstance(obj, Mapping):
        return
    for key, value in obj.items():
        if key in handled:
            continue
        text = tojson(value) if _is_list_or_map(value) else jinja_str(value)
        b.control(f"\n<{jinja_str(key)}>")
        b.content(text)
        b.control(f"</{jinja_str(key)}>")


_CODER_OUTRO = (
    "\n\nIf you choose to call a tool ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n<parameter=example_parameter_2>\nvalue_2\n</parameter>\n</function>\n"
    "</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: "
    "the tool calling block MUST begin with an opening <tool_call> tag and end with a closing "
    "</tool_call> tag.\n- Required parameters MUST be specified\n- You may provide optional "
    "reasoning for your function call in natural language BEFORE the function call, but NOT "
    "after\n- If there is no function call available, answer the question like normal with your "
    "current knowledge and do not tell the user about function calls\n</IMPORTANT>"
)


QWEN3_CODER = Qwen3CoderTemplate()


class Qwen35Template(Template):
    """Qwen3.5: tools as JSON in ``<tools>``, ``<think>`` kept for turns after the last query.

    The official template trims every message's text; the reasoning of earlier turns is
    dropped from history (as for Qwen3).
    """

    name = "qwen3.5"
    history = EARLIER_THINKING_DROPPED
    aliases = ("qwen35", "qwen3_5")
    model_ids = (
        "Qwen/Qwen3.5-0.8B",
        "Qwen/Qwen3.5-4B",
        "Qwen/Qwen3.5-9B",
        "Qwen/Qwen3.5-27B",
        "Qwen/Qwen3.5-35B-A3B",
        "Qwen/Qwen3.5-397B-A17B",
    )
    model_patterns = (r"qwen3\.5",)
    description = (
        "Qwen3.5: ChatML with <think> reasoning (enable_thinking option), tools as JSON in "
        "<tools>, calls in Qwen3-Coder XML form <function=name><parameter=k>v</parameter>."
    )
    source = "official Jinja: Qwen3.5-4B.jinja"
    official_templates = ("Qwen3.5-4B.jinja",)
    control_tokens = QWEN_CONTROL_TOKENS
    supports_tools = True
    supports_reasoning = True
    tool_parser_class = Qwen3CoderParser
    reasoning_parser_class = Qwen3ThinkParser
    default_options: ClassVar[Mapping[str, Any]] = {"enable_thinking": True}
    generation_config = GenerationConfig(
        session_len=262144,
        stop_words=_STOPS,
        temperature=1.0,
        top_p=0.95,
        top_k=20,
        extra={
            "min_p": 0.0,
            "presence_penalty": 1.5,
            "non_thinking": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0},
        },
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        msgs = conv.messages
        if not msgs:
            require_messages(self.name, conv)
        b = ctx.builder()
        first = msgs[0]
        if conv.tools:
            b.control(f"{IM_START}system\n" + _TOOLS35_INTRO)
            for tool in conv.tools:
                b.control("\n")
                b.content(tool.json)
            b.control("\n</tools>" + _TOOLS35_OUTRO)
            if first.role == "system":
                text = first.text.strip()
                if text:
                    b.control("\n\n", first.index)
                    b.content(text, first.index)
            b.control(IM_END + "\n")
        elif first.role == "system":
            b.turn(f"{IM_START}system\n", first.text.strip(), IM_END, "\n", first.index)
        last_query = self._last_query(msgs)
        for pos, m in enumerate(msgs):
            role = m.role
            if role == "system":
                if pos:
                    raise ValidationError(
                        f"template {self.name!r} accepts a system message only at the beginning",
                        index=m.index,
                        field="role",
                    )
            elif role == "user":
                b.turn(f"{IM_START}user\n", m.text.strip(), IM_END, "\n", m.index)
            elif role == "assistant":
                self._assistant(b, m, pos > last_query)
            elif role == "tool":
                prev = msgs[pos - 1].role if pos else None
                nxt = msgs[pos + 1].role if pos + 1 < len(msgs) else None
                head = IM_START + "user" if prev is not None and prev != "tool" else ""
                tail = IM_END + "\n" if nxt != "tool" else ""
                b.turn(
                    head + "\n<tool_response>\n",
                    m.text.strip(),
                    "\n</tool_response>" + tail,
                    "",
                    m.index,
                )
            else:  # pragma: no cover - validated roles are the four above
                raise ValidationError(f"unexpected role {role!r}", index=m.index, field="role")
        if ctx.add_generation_prompt:
            b.control(_ASSISTANT)
            if ctx.options.get("enable_thinking") is False:
                b.control("<think>\n\n</think>\n\n")
            else:
                b.control("<think>\n")
        return b.segments

    def _last_query(self, msgs: Sequence[Message]) -> int:
        """Position of the last user message that is not only ``<tool_response>`` blocks."""
        for pos in range(len(msgs) - 1, -1, -1):
            m = msgs[pos]
            if m.role == "user":
                text = m.text.strip()
                if not (text.startswith("<tool_response>") and text.endswith("</tool_response>")):
                    return pos
        raise ValidationError(
            f"template {self.name!r} needs a user query (a user message that is not only "
            "tool responses)",
            field="messages",
        )

    def _assistant(self, b: SegmentBuilder, m: Message, current: bool) -> None:
        content = m.text.strip()
        reasoning = ""
        if m.reasoning_content is not None:
            reasoning = m.reasoning_content
        elif "</think>" in content:
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
            content = content.split("</think>")[-1].lstrip("\n")
        if current:
            b.control(_ASSISTANT, m.index)
            b.control("<think>\n", m.index, True)
            b.content(reasoning.strip(), m.index, True)
            b.control("\n</think>\n\n", m.index, True)
        else:
            b.control(_ASSISTANT, m.index)
        b.content(content, m.index, True)
        for j, call in enumerate(m.tool_calls):
            args = call_arguments(self.name, m, call, j)
            head = "\n" if j else ("\n\n" if content.strip() else "")
            xml_call(b, m.index, call.name, args, head)
        b.control(IM_END, m.index, True)
        b.control("\n", m.index)


_TOOLS35_INTRO = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
_TOOLS35_OUTRO = (
    "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
    "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\n"
    "Reminder:\n- Function calls MUST follow the specified format: an inner <function=...>"
    "</function> block must be nested within <tool_call></tool_call> XML tags\n- Required "
    "parameters MUST be specified\n- You may provide optional reasoning for your function call "
    "in natural language BEFORE the function call, but NOT after\n- If there is no function "
    "call available, answer the question like normal with your current knowledge and do not "
    "tell the user about function calls\n</IMPORTANT>"
)


QWEN35 = Qwen35Template()

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (QWEN3_CODER, QWEN35)
