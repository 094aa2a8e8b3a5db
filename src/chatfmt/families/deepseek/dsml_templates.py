"""DeepSeek V3.2 and V4 (DSML tool calls).

V3.2 is a native template, byte-identical to the official ``deepseek-ai-DeepSeek-V3.2.jinja``;
V4 and V4-Flash-0731 ship as their official Jinja templates (parser ``deepseek_v4``).
``thinking=True`` (or ``enable_thinking``) prefills ``<think>``; by default thinking is off.

V3.2 layout: BOS, the system prompt (every system message, joined by a blank line, then
the DSML tools section), then ``<｜User｜>text`` and ``<｜Assistant｜>`` turns. An
assistant turn opens with ``</think>`` (or, with ``thinking`` after the last user
message, ``<think>reasoning</think>``); tool calls are DSML blocks
(``<｜DSML｜function_calls>`` …, string values as text, others as JSON); tool results
are ``<function_results><result>…</result></function_results>`` and the next
assistant turn continues after a blank line.

Deviations, so that nothing is lost silently (the official template drops these):
``reasoning_content`` after the last user message without ``thinking`` (or in an
assistant message that directly follows another), ``developer`` messages, and
non-function tools raise :class:`~chatfmt.errors.UnsupportedFeatureError`. Reasoning
of turns before the last user message is not written (as in the official template).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import UnsupportedFeatureError, ValidationError
from ...history_rules import EARLIER_REASONING_DROPPED
from ...jinja.packaged import PackagedTemplate
from ...parsing.reasoning import ThinkParser
from ...protocol import Conversation, Message, _json_dumps
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template
from .dsml_parser import DeepSeekDSMLParser
from .markers import ASSISTANT, BEGIN_OF_SENTENCE, END_OF_SENTENCE, THINK, THINK_CLOSE, USER

BOS = BEGIN_OF_SENTENCE
EOS = END_OF_SENTENCE
THINK_END = THINK_CLOSE
DSML = "｜DSML｜"
_CALLS, _CALLS_END = f"<{DSML}function_calls>", f"</{DSML}function_calls>"
_TOOLS_HEADER = (
    "## Tools\n\nYou have access to a set of tools you can use to answer the user's question.\n"
    f'You can invoke functions by writing a "<{DSML}function_calls>" block like the following '
    f"as part of your reply to the user:\n<{DSML}function_calls>\n"
    f'<{DSML}invoke name="$FUNCTION_NAME">\n'
    f'<{DSML}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{DSML}parameter>\n'
    f'...\n</{DSML}invoke>\n<{DSML}invoke name="$FUNCTION_NAME2">\n...\n</{DSML}invoke>\n'
    f"</{DSML}function_calls>\n\n"
    "String and scalar parameters should be specified as is without any escaping or quotes, "
    'while lists and objects should use JSON format. The "string" attribute should be set to '
    '"true" for string type parameters and "false" for other types (numbers, booleans, arrays, '
    "objects).\n\nIf the thinking_mode is enabled, then after function results you should "
    "strongly consider outputting a thinking block. Here is an example:\n\n"
    f"<{DSML}function_calls>\n...\n</{DSML}function_calls>\n\n<function_results>\n...\n"
    f"</function_results>\n\n{THINK}...thinking about results{THINK_END}\n\n"
    "Here are the functions available in JSONSchema format:\n<functions>\n"
)
_TOOLS_FOOTER = "</functions>\n"


class DeepSeekV32Template(Template):
    """DeepSeek V3.2 (see module doc); ``thinking`` (or ``enable_thinking``), default off."""

    name = "deepseek-v3.2"
    history = EARLIER_REASONING_DROPPED
    aliases = ("deepseek-v32", "deepseek3.2")
    model_ids = ("deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2-Speciale")
    description = "DeepSeek V3.2: <｜User｜>/<｜Assistant｜>, </think> switch, DSML tool calls."
    source = "official Jinja: deepseek-ai-DeepSeek-V3.2.jinja"
    official_templates = ("deepseek-ai-DeepSeek-V3.2.jinja",)
    supports_tools = True
    supports_reasoning = True
    tool_parser_class = DeepSeekDSMLParser
    reasoning_parser_class = ThinkParser
    control_tokens = (BOS, EOS, USER, ASSISTANT, THINK, THINK_END)
    generation_config = GenerationConfig(
        session_len=163_840, stop_words=(EOS,), temperature=1.0, top_p=0.95
    )
    default_options: ClassVar[Mapping[str, Any]] = {"thinking": None, "enable_thinking": None}

    @staticmethod
    def _thinking(ctx: RenderContext) -> bool:
        value = ctx.option("thinking")
        if value is None:
            value = ctx.option("enable_thinking")
        return bool(value)

    def _refuse(self, what: str, index: int | None, field: str) -> None:
        raise UnsupportedFeatureError(
            f"template {self.name!r} {what} (the official template would drop it silently)",
            index=index,
            field=field,
        )

    def _system(self, b: SegmentBuilder, conv: Conversation) -> None:
        systems = [m for m in conv.messages if m.role == "system"]
        for k, m in enumerate(systems):
            if m.source_role == "developer":
                self._refuse("has no place for developer messages", m.index, "role")
            if k:
                b.control("\n\n", m.index)
            b.content(m.text, m.index)
        wrote = len(systems) > 1 or any(m.text for m in systems)  # the joined prompt is not empty
        for tool in conv.tools:
            if tool.type != "function":
                self._refuse("has no format for non-function tools", None, f"tools[{tool.index}]")
        if conv.tools:
            b.control(("\n\n" if wrote else "") + _TOOLS_HEADER)
            for tool in conv.tools:
                b.content(_json_dumps(tool.raw["function"]))
                b.control("\n")
            b.control(_TOOLS_FOOTER)

    def _calls(self, b: SegmentBuilder, m: Message) -> None:
        i = m.index
        b.control(f"\n\n{_CALLS}\n", i, True)
        for j, call in enumerate(m.tool_calls):
            if call.is_code or not isinstance(call.arguments, dict):
                raise ValidationError(
                    f"template {self.name!r} needs function calls with object arguments",
                    index=i,
                    field=f"tool_calls[{j}]",
                )
            b.control(f'<{DSML}invoke name="', i, True)
            b.content(call.name, i, True)
            b.control('">\n', i, True)
            for key, val in call.arguments.items():
                b.control(f'<{DSML}parameter name="', i, True)
                b.content(key, i, True)
                b.control(
                    '" string="true">' if isinstance(val, str) else '" string="false">', i, True
                )
                b.content(val if isinstance(val, str) else _json_dumps(val), i, True)
                b.control(f"</{DSML}parameter>\n", i, True)
            b.control(f"</{DSML}invoke>\n", i, True)
        b.control(_CALLS_END, i, True)

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        thinking = self._thinking(ctx)
        msgs = conv.messages
        last_user = max((p for p, m in enumerate(msgs) if m.role == "user"), default=-1)
        b = ctx.builder()
        b.control(BOS)
        self._system(b, conv)
        pending_assistant = pending_tool = False
        calls_at, calls_count = -1, 0  # the last assistant message with calls: position, count
        for p, m in enumerate(msgs):
            i = m.index
            if m.role == "user":
                b.control(USER, i)
                b.content(m.text, i)
                pending_assistant, pending_tool = True, False
            elif m.role == "assistant":
                after_last_user = p > last_user
                opens = pending_assistant or pending_tool
                if m.reasoning_content and after_last_user and not (thinking and opens):
                    self._refuse(
                        "writes reasoning_content only with thinking on, in a turn that follows "
                        "a user message or tool results",
                        i,
                        "reasoning_content",
                    )
                if opens:
                    lead = ASSISTANT if pending_assistant else "\n\n"
                    if after_last_user and thinking:
                        b.control(lead + THINK, i)
                        b.content(m.reasoning_content or "", i, True)
                        b.control(THINK_END, i, True)
                    else:
                        b.control(lead + THINK_END, i)
                pending_assistant = pending_tool = False
                b.content(m.text, i, True)
                if m.tool_calls:
                    self._calls(b, m)
                    calls_at, calls_count = p, len(m.tool_calls)
                b.control(EOS, i, True)
            elif m.role == "tool":
                if calls_at < 0:
                    raise ValidationError(
                        f"template {self.name!r} needs an assistant tool call before a tool result",
                        index=i,
                        field="role",
                    )
                order = p - calls_at
                if order == 1:
                    b.control("\n\n<function_results>", i)
                b.turn("\n<result>", m.text, "</result>", "", i)
                if order == calls_count:
                    b.control("\n</function_results>", i)
                    pending_assistant, pending_tool = False, True
        if ctx.add_generation_prompt and (pending_assistant or pending_tool):
            lead = ASSISTANT if pending_assistant else "\n\n"
            b.control(lead + (THINK if thinking else THINK + THINK_END))
        return b.segments


_TOKENS = {"bos_token": BOS, "eos_token": EOS}
_V4_GENERATION = GenerationConfig(
    stop_words=(EOS,), temperature=1.0, top_p=0.95, session_len=1_048_576
)
DEEPSEEK_V32 = DeepSeekV32Template()
DEEPSEEK_V4 = PackagedTemplate(
    "deepseek-ai-DeepSeek-V4.jinja",
    history=EARLIER_REASONING_DROPPED,
    name="deepseek-v4",
    model_ids=("deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Pro"),
    tool_parser=DeepSeekDSMLParser,
    tool_parser_name="deepseek_v4",
    reasoning_parser=ThinkParser,
    generation=_V4_GENERATION,
    variables=_TOKENS,
    description="DeepSeek V4 (official Jinja; <｜DSML｜tool_calls> calls, thinking option)",
)
DEEPSEEK_V4_FLASH_0731 = PackagedTemplate(
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja",
    history=EARLIER_REASONING_DROPPED,
    name="deepseek-v4-flash-0731",
    model_ids=("deepseek-ai/DeepSeek-V4-Flash-0731",),
    tool_parser=DeepSeekDSMLParser,
    tool_parser_name="deepseek_v4",
    reasoning_parser=ThinkParser,
    generation=_V4_GENERATION,
    variables=_TOKENS,
    description="DeepSeek V4-Flash-0731 (official Jinja; as V4, reasoning_effort high/max)",
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (DEEPSEEK_V32, DEEPSEEK_V4, DEEPSEEK_V4_FLASH_0731)
