"""DeepSeek chat formats: Coder, V2, V3, V3.1 and the R1 distills, byte-identical to the official templates.

The V3/R1 templates keep some state across the conversation (whether the first tool
call or tool output was already written); it is reproduced here as the official
template does it, quirks included (e.g. V3 writes the ``<｜tool▁calls▁end｜>`` closer
only after a second call).

Deviations, so that no conversation data is lost silently:

* V3 and R1-Distill-Llama write an assistant message's tool calls only when its content
  is ``null``; with any text they drop the calls. chatfmt treats content ``""`` with tool
  calls like ``null`` (OpenAI clients send either) and renders the calls exactly as the
  official template does for ``null``; non-empty content together with tool calls raises
  :class:`~chatfmt.errors.UnsupportedFeatureError` (``field="tool_calls"``). Put the text
  in a separate assistant message before the call instead.
* The R1 distills write only the last system message; a conversation with more than one
  system message raises :class:`~chatfmt.errors.UnsupportedFeatureError` naming the first
  one that would be dropped (``field="role"``).

As in the official templates, earlier answers lose their ``<think>…</think>`` part (R1,
V3.1) and ``reasoning_content`` is not written: reasoning of messages before the last user
message is dropped (the documented exception); after it, ``reasoning_content`` raises
:class:`~chatfmt.errors.UnsupportedFeatureError` (``field="reasoning_content"``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import UnsupportedFeatureError, ValidationError
from ...history_rules import EARLIER_THINKING_DROPPED, HistoryRules
from ...parsing.reasoning import ThinkParser
from ...protocol import Conversation, Message, ToolCall
from ...segments import Segment, SegmentBuilder
from ...template import (
    RenderContext,
    Template,
    last_user_index,
    refuse_reasoning_after_last_user,
    refuse_think_cut,
    text_beside_calls,
)
from .markers import (
    ASSISTANT,
    BEGIN_OF_SENTENCE,
    END_OF_SENTENCE,
    EOT,
    INSTRUCTION,
    RESPONSE,
    THINK,
    THINK_CLOSE,
    TOOL_CALL_BEGIN,
    TOOL_CALL_END,
    TOOL_CALLS_BEGIN,
    TOOL_CALLS_END,
    TOOL_OUTPUT_BEGIN,
    TOOL_OUTPUT_END,
    TOOL_OUTPUTS_BEGIN,
    TOOL_OUTPUTS_END,
    TOOL_SEP,
    USER,
)
from .parser import DeepSeekV3Parser

BOS = BEGIN_OF_SENTENCE
EOS = END_OF_SENTENCE
CALLS_BEGIN = TOOL_CALLS_BEGIN
CALLS_END = TOOL_CALLS_END
CALL_BEGIN = TOOL_CALL_BEGIN
CALL_END = TOOL_CALL_END
SEP = TOOL_SEP
OUTPUTS_BEGIN = TOOL_OUTPUTS_BEGIN
OUTPUTS_END = TOOL_OUTPUTS_END
OUTPUT_BEGIN = TOOL_OUTPUT_BEGIN
OUTPUT_END = TOOL_OUTPUT_END
_V3_TOKENS = (
    BOS,
    EOS,
    USER,
    ASSISTANT,
    CALLS_BEGIN,
    CALLS_END,
    CALL_BEGIN,
    CALL_END,
    SEP,
    OUTPUTS_BEGIN,
    OUTPUTS_END,
    OUTPUT_BEGIN,
    OUTPUT_END,
    THINK,
    THINK_CLOSE,
)
_V3_GEN = GenerationConfig(session_len=163840, stop_words=(EOS,), top_p=0.95, temperature=0.6)


def _no_tool_format(name: str, m: Message) -> None:
    if m.tool_calls or m.role == "tool":
        raise UnsupportedFeatureError(
            f"template {name!r} has no tool-call or tool-result format",
            index=m.index,
            field="tool_calls" if m.tool_calls else "role",
        )


def _function_calls(name: str, m: Message) -> tuple[ToolCall, ...]:
    for j, call in enumerate(m.tool_calls):
        if call.is_code:
            raise UnsupportedFeatureError(
                f"template {name!r} has no code-interpreter call format",
                index=m.index,
                field=f"tool_calls[{j}]",
            )
    return m.tool_calls


# ----------------------------------------------------------------------------- Coder / V2
_CODER_SYSTEM = (
    "You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek "
    "Company, and you only answer questions related to computer science. For politically sensitive "
    "questions, security and privacy issues, and other non-computer science questions, you will "
    "refuse to answer\n"
)


class DeepSeekCoderTemplate(Template):
    """DeepSeek Coder Instruct: ``### Instruction:`` / ``### Response:`` blocks ending in ``<|EOT|>``.

    The default system text is written when the conversation has no system message;
    system messages are written as they are, wherever they occur.
    """

    name = "deepseek-coder"
    aliases = ("deepseek-coder-instruct", "deepseekcoder")
    model_ids = (
        "deepseek-ai/deepseek-coder-1.3b-instruct",
        "deepseek-ai/deepseek-coder-6.7b-instruct",
        "deepseek-ai/deepseek-coder-33b-instruct",
    )
    model_patterns = (r"deepseek-coder-[\d.]+b-instruct",)
    description = (
        "DeepSeek Coder: default system, '### Instruction:\\n…\\n### Response:\\n…\\n<|EOT|>'."
    )
    source = "official Jinja: deepseek-ai-deepseek-coder-33b-instruct.jinja (llama.cpp test case)"
    official_templates = ("deepseek-ai-deepseek-coder-33b-instruct.jinja",)
    control_tokens = (BOS, EOS, EOT, INSTRUCTION, RESPONSE)
    generation_config = GenerationConfig(session_len=16384, stop_words=(EOT,), top_p=0.95)

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        b.control(BOS)
        if not any(m.role == "system" for m in conv.messages):
            b.control(_CODER_SYSTEM)
        for m in conv.messages:
            _no_tool_format(self.name, m)
            if m.role == "system":
                b.content(m.text, m.index)
            elif m.role == "user":
                b.turn("### Instruction:\n", m.text, "\n", "", m.index)
            else:
                b.control("### Response:\n", m.index)
                b.content(m.text, m.index, True)
                b.control("\n<|EOT|>", m.index, True)
                b.control("\n", m.index)
        if ctx.add_generation_prompt:
            b.control("### Response:\n")
        return b.segments


class DeepSeekV2Template(Template):
    """DeepSeek V2 Chat: ``User: …\\n\\nAssistant: …<｜end▁of▁sentence｜>``, system text first."""

    name = "deepseek-v2"
    aliases = ("deepseek2", "deepseek-v2-chat", "deepseek")
    model_ids = (
        "deepseek-ai/DeepSeek-V2-Chat",
        "deepseek-ai/DeepSeek-V2-Lite-Chat",
        "deepseek-ai/DeepSeek-V2-Chat-0628",
        "deepseek-ai/DeepSeek-Coder-V2-Instruct",
        "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct",
    )
    # DeepSeek LLM / MoE chat models use the same 'User: …\n\nAssistant:' format.
    model_patterns = (
        r"deepseek-v2(-lite)?-chat",
        r"deepseek-coder-v2",
        r"deepseek-moe-[\d.]+b-chat",
        r"deepseek-llm-[\d.]+b-chat",
    )
    description = "DeepSeek V2: 'User: …\\n\\nAssistant: …<｜end▁of▁sentence｜>'."
    source = "official Jinja: deepseek-ai-DeepSeek-V2-Chat.jinja (llama.cpp test case)"
    official_templates = ("deepseek-ai-DeepSeek-V2-Chat.jinja",)
    control_tokens = (BOS, EOS)
    generation_config = GenerationConfig(
        session_len=32768, stop_words=(EOS,), top_p=0.95, temperature=0.3
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        b.control(BOS)
        for m in conv.messages:
            _no_tool_format(self.name, m)
            if m.role == "user":
                b.turn("User: ", m.text, "\n\n", "", m.index)
            elif m.role == "assistant":
                b.control("Assistant: ", m.index)
                b.content(m.text, m.index, True)
                b.control(EOS, m.index, True)
            else:
                b.content(m.text, m.index)
                b.control("\n\n", m.index)
        if ctx.add_generation_prompt:
            b.control("Assistant:")
        return b.segments


# ----------------------------------------------------------------------------- V3 / R1 distills
@dataclass
class _State:
    #: Index of the last user message: replies after it must not be cut at ``</think>``.
    last_user: int = -1
    is_first: bool = False
    is_tool: bool = False
    is_output_first: bool = True


class DeepSeekV3Template(Template):
    """DeepSeek V3: ``<｜User｜>``/``<｜Assistant｜>`` turns, ``<｜tool▁calls▁begin｜>`` tool calls
    (type, name and fenced JSON arguments as given) and ``<｜tool▁outputs▁begin｜>`` results.

    An assistant message with tool calls must have content null or ``""`` (the official
    template drops the calls of a message with text; chatfmt raises instead).
    """

    name = "deepseek-v3"
    history = HistoryRules(tool_definitions=False)
    aliases: tuple[str, ...] = ("deepseek3", "deepseek-v2.5")
    model_ids: tuple[str, ...] = (
        "deepseek-ai/DeepSeek-V3",
        "deepseek-ai/DeepSeek-V3-0324",
        "deepseek-ai/DeepSeek-V2.5",
        "deepseek-ai/DeepSeek-V2.5-1210",
    )
    model_patterns: tuple[str, ...] = (r"deepseek-v3(?![.\d])", r"deepseek-v2\.5")
    description = (
        "DeepSeek V3: <｜User｜>…<｜Assistant｜>…<｜end▁of▁sentence｜> with tool calls and outputs."
    )
    source = "official Jinja: deepseek-ai-DeepSeek-V3.jinja (tokenizer_config.json chat_template)"
    official_templates: tuple[str, ...] = ("deepseek-ai-DeepSeek-V3.jinja",)
    supports_tools = True
    tool_parser_class = DeepSeekV3Parser
    control_tokens = _V3_TOKENS
    generation_config = _V3_GEN
    #: R1 distills: one system message only, '</think>' history is cut, '<think>\n' prompt.
    r1_style: ClassVar[bool] = False
    #: R1-Distill-Qwen: calls whenever ``tool_calls`` is set, arguments as JSON objects, always closed.
    qwen_calls: ClassVar[bool] = False

    def _system(self, b: SegmentBuilder, conv: Conversation) -> None:
        systems = [m for m in conv.messages if m.role == "system"]
        if self.r1_style and len(systems) > 1:
            raise UnsupportedFeatureError(
                f"template {self.name!r} has room for one system message only "
                "(the official template keeps the last one and drops the others silently)",
                index=systems[0].index,
                field="role",
            )
        for k, m in enumerate(systems):
            if k:
                b.control("\n\n", m.index)
            b.content(m.text, m.index)

    def _call(
        self, b: SegmentBuilder, m: Message, call: ToolCall, first: bool, text: bool = False
    ) -> None:
        i = m.index
        if first:
            b.control(ASSISTANT, i)
        if text:  # the model's own form: its text as written, then the calls
            b.content(m.text, i, True)
        if first:
            b.control(CALLS_BEGIN + CALL_BEGIN, i, True)
        else:
            b.control("\n" + CALL_BEGIN, i, True)
        b.control(call.type + SEP, i, True)
        b.content(call.name, i, True)
        b.control("\n```json\n", i, True)
        args = (
            json.dumps(call.arguments, ensure_ascii=False)
            if self.qwen_calls
            else call.arguments_json
        )
        b.content(args, i, True)
        b.control("\n```" + CALL_END, i, True)

    def _calls(self, b: SegmentBuilder, m: Message, ns: _State, text: bool = False) -> None:
        ns.is_tool = False
        for k, call in enumerate(_function_calls(self.name, m)):
            if not ns.is_first:
                self._call(b, m, call, True, text and not k)
                ns.is_first = True
            else:
                self._call(b, m, call, False, text and not k)
                if not self.qwen_calls:
                    b.control(CALLS_END + EOS, m.index, True)
        if self.qwen_calls:
            b.control(CALLS_END + EOS, m.index, True)

    def _answer(self, b: SegmentBuilder, m: Message, ns: _State) -> None:
        text = m.text
        if ns.is_tool:
            b.control(OUTPUTS_END, m.index)
            ns.is_tool = False
        else:
            if self.r1_style and THINK_CLOSE in text:
                text = text.split(THINK_CLOSE)[-1]
                if m.index > ns.last_user:
                    refuse_think_cut(self.name, m, text)
            b.control(ASSISTANT, m.index)
        b.content(text, m.index, True)
        b.control(EOS, m.index, True)

    def _assistant(self, b: SegmentBuilder, m: Message, ns: _State, ctx: RenderContext) -> None:
        if self.qwen_calls:  # calls whenever there are any, then the text (if not null)
            if m.tool_calls:
                self._calls(b, m, ns)
            if m.content is not None:
                self._answer(b, m, ns)
            return
        # The official template writes calls only for content null and drops them otherwise
        # ("" counts as null here); text with calls is written as the model writes it, before
        # the calls (refused with strict_history rather than losing the calls).
        text = text_beside_calls(self.name, m, ctx)
        if m.content is None or m.tool_calls:
            self._calls(b, m, ns, text)
        else:
            self._answer(b, m, ns)

    def _generation_prompt(self, b: SegmentBuilder, ctx: RenderContext) -> None:
        b.control(ASSISTANT)

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        b.control(BOS)
        self._system(b, conv)
        ns = _State(last_user=last_user_index(conv))
        for m in conv.messages:
            if m.role == "user":
                ns.is_tool = False
                b.control(USER, m.index)
                b.content(m.text, m.index)
            elif m.role == "assistant":
                self._assistant(b, m, ns, ctx)
            elif m.role == "tool":
                ns.is_tool = True
                if ns.is_output_first:
                    b.control(OUTPUTS_BEGIN + OUTPUT_BEGIN, m.index)
                    ns.is_output_first = False
                else:
                    b.control("\n" + OUTPUT_BEGIN, m.index)
                b.content(m.text, m.index)
                b.control(OUTPUT_END, m.index)
        if ns.is_tool:
            b.control(OUTPUTS_END)
        if ctx.add_generation_prompt and not ns.is_tool:
            self._generation_prompt(b, ctx)
        return b.segments


class DeepSeekR1DistillLlamaTemplate(DeepSeekV3Template):
    """DeepSeek-R1-Distill-Llama: the V3 format with ``<think>`` reasoning.

    The prompt ends with ``<｜Assistant｜><think>\\n``; earlier answers keep only the text
    after their last ``</think>`` (``reasoning_content`` is not written, as in the official
    template); in replies after the last user message both are refused instead.
    """

    name = "deepseek-r1-distill-llama"
    history = dataclasses.replace(EARLIER_THINKING_DROPPED, tool_definitions=False)
    aliases: tuple[str, ...] = ("deepseek-r1-llama", "r1-distill-llama")
    model_ids: tuple[str, ...] = (
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    )
    model_patterns: tuple[str, ...] = (r"deepseek-r1-distill-llama",)
    description = "DeepSeek-R1-Distill-Llama: DeepSeek V3 turns, '<think>\\n' generation prompt."
    source = "official Jinja: deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"
    official_templates: tuple[str, ...] = ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",)
    supports_reasoning = True
    reasoning_parser_class = ThinkParser
    generation_config = _V3_GEN.replace(session_len=131072)
    r1_style = True

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        refuse_reasoning_after_last_user(self.name, conv)  # the official template never writes it
        return super().render_conversation(conv, ctx)

    def _generation_prompt(self, b: SegmentBuilder, ctx: RenderContext) -> None:
        b.control(ASSISTANT + "<think>\n")


class DeepSeekR1DistillQwenTemplate(DeepSeekR1DistillLlamaTemplate):
    """DeepSeek-R1-Distill-Qwen: as the Llama distill; JSON-object arguments; option ``enable_thinking``.

    As the official template, the generation prompt closes the think block
    (``<think>\\n</think>``) unless ``enable_thinking=True``.
    """

    name = "deepseek-r1-distill-qwen"
    history = dataclasses.replace(EARLIER_THINKING_DROPPED, tool_definitions=False)
    aliases = ("deepseek-r1-qwen", "r1-distill-qwen")
    model_ids = (
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    )
    model_patterns = (r"deepseek-r1-distill-qwen",)
    description = "DeepSeek-R1-Distill-Qwen: DeepSeek V3 turns, '<think>\\n' prompt (closed unless enable_thinking)."
    source = "official Jinja: deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
    official_templates = ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",)
    default_options: ClassVar[Mapping[str, Any]] = {"enable_thinking": False}
    qwen_calls = True

    def _generation_prompt(self, b: SegmentBuilder, ctx: RenderContext) -> None:
        b.control(ASSISTANT + "<think>\n" + ("" if ctx.option("enable_thinking") else THINK_CLOSE))


# ----------------------------------------------------------------------------- V3.1
class DeepSeekV31Template(Template):
    """DeepSeek V3.1: hybrid thinking (``thinking`` option), ``<think></think>`` before answers,
    tool calls as ``<｜tool▁call▁begin｜>name<｜tool▁sep｜>{json}<｜tool▁call▁end｜>``.

    ``thinking`` (default off; ``enable_thinking`` is accepted too, as the official
    template does) chooses ``<think>`` or ``<think></think>`` after the last user turn.
    """

    name = "deepseek-v3.1"
    history = dataclasses.replace(EARLIER_THINKING_DROPPED, tool_definitions=False)
    aliases = ("deepseek-v31", "deepseek3.1")
    model_ids = (
        "deepseek-ai/DeepSeek-V3.1",
        "deepseek-ai/DeepSeek-V3.1-Terminus",
    )
    model_patterns = (r"deepseek-v3\.1",)
    description = "DeepSeek V3.1: <｜User｜>/<｜Assistant｜> with <think> switch and name<｜tool▁sep｜>JSON tool calls."
    source = "official Jinja: deepseek-ai-DeepSeek-V3.1.jinja"
    official_templates = ("deepseek-ai-DeepSeek-V3.1.jinja",)
    supports_tools = True
    supports_reasoning = True
    tool_parser_class = DeepSeekV3Parser
    tool_parser = "deepseek_v31"  # the name V3.1's parser is known by (an alias of deepseek_v3)
    reasoning_parser_class = ThinkParser
    control_tokens = _V3_TOKENS
    generation_config = _V3_GEN.replace(session_len=131072)
    default_options: ClassVar[Mapping[str, Any]] = {"thinking": None, "enable_thinking": None}

    @staticmethod
    def _thinking(ctx: RenderContext) -> bool:
        value = ctx.option("thinking")
        if value is None:
            value = ctx.option("enable_thinking")
        return bool(value)

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        refuse_reasoning_after_last_user(self.name, conv)  # the official template never writes it
        last_user = last_user_index(conv)
        b = ctx.builder()
        b.control(BOS)
        for k, s in enumerate(m for m in conv.messages if m.role == "system"):
            if k:
                b.control("\n\n", s.index)
            b.content(s.text, s.index)
        is_tool = is_last_user = False
        for m in conv.messages:
            i = m.index
            if m.role == "user":
                is_tool, is_last_user = False, True
                b.control(USER, i)
                b.content(m.text, i)
            elif m.role == "assistant" and m.tool_calls:
                if is_last_user:
                    b.control(ASSISTANT + "<think></think>", i)
                is_last_user = is_tool = False
                for j, call in enumerate(_function_calls(self.name, m)):
                    if j == 0:
                        b.content(m.text, i, True)
                        b.control(CALLS_BEGIN, i, True)
                    b.control(CALL_BEGIN, i, True)
                    b.content(call.name, i, True)
                    b.control(SEP, i, True)
                    b.content(json.dumps(call.arguments, ensure_ascii=False), i, True)
                    b.control(CALL_END, i, True)
                b.control(CALLS_END + EOS, i, True)
            elif m.role == "assistant":
                if m.content is None:
                    raise ValidationError(
                        f"template {self.name!r} needs content (or tool_calls) in assistant messages",
                        index=i,
                        field="content",
                    )
                if is_last_user:
                    b.control(ASSISTANT + "<think></think>", i)
                is_last_user = False
                text = m.text
                if is_tool:
                    is_tool = False
                elif THINK_CLOSE in text:
                    text = text.split(THINK_CLOSE, 1)[1]
                    if i > last_user:
                        refuse_think_cut(self.name, m, text)
                b.content(text, i, True)
                b.control(EOS, i, True)
            elif m.role == "tool":
                is_last_user, is_tool = False, True
                b.turn(OUTPUT_BEGIN, m.text, OUTPUT_END, "", i)
        if ctx.add_generation_prompt and is_last_user and not is_tool:
            b.control(ASSISTANT + (THINK if self._thinking(ctx) else "<think></think>"))
        return b.segments


DEEPSEEK_CODER = DeepSeekCoderTemplate()
DEEPSEEK_V2 = DeepSeekV2Template()
DEEPSEEK_V3 = DeepSeekV3Template()
DEEPSEEK_V31 = DeepSeekV31Template()
DEEPSEEK_R1_DISTILL_LLAMA = DeepSeekR1DistillLlamaTemplate()
DEEPSEEK_R1_DISTILL_QWEN = DeepSeekR1DistillQwenTemplate()

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (
    DEEPSEEK_CODER,
    DEEPSEEK_V2,
    DEEPSEEK_V3,
    DEEPSEEK_V31,
    DEEPSEEK_R1_DISTILL_LLAMA,
    DEEPSEEK_R1_DISTILL_QWEN,
)
