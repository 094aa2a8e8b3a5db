"""Qwen chat formats: Qwen 1/1.5/2 (ChatML), Qwen2.5, Qwen3 and QwQ (ChatML + Hermes-style tools).

All are ChatML turns ``<|im_start|>{role}\\n{content}<|im_end|>\\n``. Qwen2.5, Qwen3 and QwQ
list tools as JSON inside ``<tools></tools>`` in the system turn, write calls as
``<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`` and group consecutive tool
results into one ``user`` turn of ``<tool_response>`` blocks. Each class reproduces its
official Jinja template byte for byte (see ``official_templates``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...history_rules import EARLIER_THINKING_DROPPED
from ...protocol import Conversation, Message, Tool
from ...segments import Segment, SegmentBuilder
from ...spec import RoleFormat, SpecTemplate, TemplateSpec
from ...template import (
    RenderContext,
    Template,
    refuse_reasoning_after_last_user,
    refuse_think_cut,
)
from ..chatml.markers import ENDOFTEXT, IM_END, IM_START
from ..chatml.render import chatml_turn, function_call, require_messages, require_text, tojson
from ..hermes.markers import TOOLS_INTRO, TOOLS_OUTRO
from ..hermes.parser import HermesParser
from .parser import Qwen3ThinkParser

QWEN_CONTROL_TOKENS = (IM_START, IM_END, ENDOFTEXT)

QWEN25_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
_TOOLS_INTRO = TOOLS_INTRO
_TOOLS_OUTRO = TOOLS_OUTRO + IM_END + "\n"


def tool_json(tool: Tool, i: int) -> str:
    """``tool | tojson``: the caller's tool object, key order kept."""
    return tool.json


_HEADERS = {role: f"{IM_START}{role}\n" for role in ("system", "user", "assistant", "tool")}
_ASSISTANT = _HEADERS["assistant"]
_END_LINE = IM_END + "\n"
_USER_OPEN = IM_START + "user"
_ASSISTANT_OPEN = IM_START + "assistant"
#: A tool result's opening and closing text, by (first of a run, last of a run).
_RESPONSE_OPEN = {True: _USER_OPEN + "\n<tool_response>\n", False: "\n<tool_response>\n"}
_RESPONSE_CLOSE = {True: "\n</tool_response>" + _END_LINE, False: "\n</tool_response>"}


def hermes_call(b: SegmentBuilder, index: int, name: str, arguments: str) -> None:
    """``<tool_call>\\n{"name": "…", "arguments": …}\\n</tool_call>`` as trained segments."""
    b.control('<tool_call>\n{"name": "', index, True)
    b.content(name, index, True)
    b.control('", "arguments": ', index, True)
    b.content(arguments, index, True)
    b.control("}\n</tool_call>", index, True)


class _QwenToolsBase(Template):
    """Qwen2.5 / Qwen3 / QwQ: the shared system-with-tools header and tool-result grouping."""

    control_tokens = QWEN_CONTROL_TOKENS
    supports_tools = True
    tool_parser_class = HermesParser
    #: Text before ``# Tools`` when the first message is not a system message.
    default_system: ClassVar[str | None] = None
    #: Qwen3 writes ``system + "\\n\\n"`` only when there is a system message.
    system_gap_always: ClassVar[bool] = True
    #: Whether every reply without tool calls is the plain turn ``<|im_start|>assistant\n
    #: {content}<|im_end|>\n`` (then the loop writes it without calling ``_assistant``).
    plain_replies: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        system = self.default_system
        #: The whole default system turn (written when there is no system message and no tools).
        self._default_system_turn = (
            f"{IM_START}system\n{system}{IM_END}\n" if system is not None else ""
        )

    def _header(self, b: SegmentBuilder, conv: Conversation) -> None:
        first = conv.messages[0]
        if conv.tools:
            b.control(f"{IM_START}system\n")
            if first.role == "system":
                b.content(require_text(self.name, first), first.index)
                b.control("\n\n", first.index)
            else:
                b.control((self.default_system or "") + ("\n\n" if self.system_gap_always else ""))
            b.control(_TOOLS_INTRO)
            for i, tool in enumerate(conv.tools):
                b.control("\n")
                b.content(tool_json(tool, i))
            b.control(_TOOLS_OUTRO)
        elif first.role == "system":
            text = first.content
            if text is None:
                text = require_text(self.name, first)
            b.turn(_HEADERS["system"], text, IM_END, "\n", first.index)
        elif self.default_system is not None:
            b.control(self._default_system_turn)

    def _tool_result(self, b: SegmentBuilder, msgs: Sequence[Message], pos: int) -> None:
        m = msgs[pos]
        first = pos == 0 or msgs[pos - 1].role != "tool"
        last = pos == len(msgs) - 1 or msgs[pos + 1].role != "tool"
        b.turn(
            _RESPONSE_OPEN[first], require_text(self.name, m), _RESPONSE_CLOSE[last], "", m.index
        )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        msgs = conv.messages
        if not msgs:
            require_messages(self.name, conv)
        b = ctx.builder()
        self._header(b, conv)
        last_query = self._last_query(msgs)
        turn = b.turn
        assistant = self._assistant
        plain_replies = self.plain_replies
        for pos, m in enumerate(msgs):
            role = m.role
            if role == "assistant":
                if plain_replies and not m.tool_calls and m.content is not None:
                    turn(_ASSISTANT, m.content, IM_END, "\n", m.index, True)  # the common reply
                else:
                    assistant(b, msgs, pos, last_query)
            elif role == "user" or (role == "system" and pos > 0):
                text = m.content
                if text is None:
                    text = require_text(self.name, m)
                turn(_HEADERS[role], text, IM_END, "\n", m.index)
            elif role == "tool":
                self._tool_result(b, msgs, pos)
        if ctx.add_generation_prompt:
            self._generation_prompt(b, ctx)
        return b.segments

    def _last_query(self, msgs: Sequence[Message]) -> int:
        """Position of the last user query (only Qwen3 uses it)."""
        return len(msgs) - 1

    def _assistant(
        self, b: SegmentBuilder, msgs: Sequence[Message], pos: int, last_query: int
    ) -> None:
        raise NotImplementedError

    def _generation_prompt(self, b: SegmentBuilder, ctx: RenderContext) -> None:
        b.control(_ASSISTANT)

    def _call_turn(self, b: SegmentBuilder, m: Message, content: str) -> None:
        """Qwen2.5/QwQ: ``<|im_start|>assistant[\\n content]`` then ``\\n<tool_call>…`` per call.

        ``content`` is written only when the message content is non-empty; arguments are
        always ``tojson`` of the parsed object.
        """
        b.control(_ASSISTANT_OPEN, m.index)
        first = True  # the first newline is the header's (the generation prompt has it)
        if m.content:
            b.control("\n", m.index)
            b.content(content, m.index, True)
            first = False
        for j, call in enumerate(m.tool_calls):
            call = function_call(self.name, m, call, j)
            b.control("\n", m.index, trained=not first)
            first = False
            arguments = (
                tojson(call.arguments) if call.arguments_given_as_string else call.arguments_json
            )
            hermes_call(b, m.index, call.name, arguments)
        b.control(IM_END, m.index, True)
        b.control("\n", m.index)


class Qwen25Template(_QwenToolsBase):
    """Qwen2.5 Instruct (and Qwen2.5-Coder/Math Instruct): ChatML with a default system prompt."""

    name = "qwen2.5"
    aliases = ("qwen2_5", "qwen2d5", "qwen25", "qwen2.5-instruct", "qwen2.5-coder")
    model_ids = (
        "Qwen/Qwen2.5-0.5B-Instruct",
        "Qwen/Qwen2.5-1.5B-Instruct",
        "Qwen/Qwen2.5-3B-Instruct",
        "Qwen/Qwen2.5-7B-Instruct",
        "Qwen/Qwen2.5-14B-Instruct",
        "Qwen/Qwen2.5-32B-Instruct",
        "Qwen/Qwen2.5-72B-Instruct",
        "Qwen/Qwen2.5-Coder-7B-Instruct",
        "Qwen/Qwen2.5-Coder-32B-Instruct",
    )
    model_patterns = (r"qwen2\.?5(?!-vl|-omni).*(instruct|chat)", r"qwen2\.?5-coder.*instruct")
    description = (
        "Qwen2.5 Instruct: ChatML, default system 'You are Qwen, created by Alibaba Cloud…', "
        "tools as JSON in <tools>, calls in <tool_call>, results in <tool_response> user turns."
    )
    source = "official Jinja: Qwen-Qwen2.5-7B-Instruct.jinja"
    official_templates = ("Qwen-Qwen2.5-7B-Instruct.jinja",)
    default_system = QWEN25_DEFAULT_SYSTEM
    plain_replies = True
    generation_config = GenerationConfig(
        session_len=32768,
        stop_words=(IM_END, ENDOFTEXT),
        temperature=0.7,
        top_p=0.8,
        top_k=20,
        repetition_penalty=1.05,
    )

    def _assistant(
        self, b: SegmentBuilder, msgs: Sequence[Message], pos: int, last_query: int
    ) -> None:
        m = msgs[pos]
        if m.tool_calls:
            self._call_turn(b, m, m.content or "")
        else:
            text = m.content
            if text is None:
                text = require_text(self.name, m)
            b.turn(_ASSISTANT, text, IM_END, "\n", m.index, True)


class Qwen3Template(_QwenToolsBase):
    """Qwen3 (hybrid thinking): ``<think>`` kept only for turns after the last user query."""

    name = "qwen3"
    history = EARLIER_THINKING_DROPPED
    aliases = ("qwen-3", "qwen3-instruct")
    model_ids = (
        "Qwen/Qwen3-0.6B",
        "Qwen/Qwen3-1.7B",
        "Qwen/Qwen3-4B",
        "Qwen/Qwen3-8B",
        "Qwen/Qwen3-14B",
        "Qwen/Qwen3-32B",
        "Qwen/Qwen3-30B-A3B",
        "Qwen/Qwen3-235B-A22B",
    )
    model_patterns = (r"qwen3(?!\.5|-coder|-vl|-next)(?!.*2507)",)
    description = (
        "Qwen3: ChatML with <think> reasoning (enable_thinking option), Hermes-style tools; "
        "reasoning of earlier turns is dropped from history."
    )
    source = "official Jinja: Qwen-Qwen3-0.6B.jinja"
    official_templates = ("Qwen-Qwen3-0.6B.jinja",)
    supports_reasoning = True
    reasoning_parser_class = Qwen3ThinkParser
    system_gap_always = False
    default_options: ClassVar[Mapping[str, Any]] = {"enable_thinking": True}
    generation_config = GenerationConfig(
        session_len=40960,
        stop_words=(IM_END, ENDOFTEXT),
        temperature=0.6,
        top_p=0.95,
        top_k=20,
        extra={
            "min_p": 0.0,
            "non_thinking": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0},
        },
    )

    def _last_query(self, msgs: Sequence[Message]) -> int:
        """Position of the last real user query: not a ``<tool_response>``-only message."""
        for pos in range(len(msgs) - 1, -1, -1):
            m = msgs[pos]
            if m.role == "user":
                text = require_text(self.name, m)
                if not (text.startswith("<tool_response>") and text.endswith("</tool_response>")):
                    return pos
        return len(msgs) - 1

    def _assistant(
        self, b: SegmentBuilder, msgs: Sequence[Message], pos: int, last_query: int
    ) -> None:
        m = msgs[pos]
        raw = require_text(self.name, m)
        content, reasoning = raw, ""
        if m.reasoning_content is not None:
            reasoning = m.reasoning_content
        elif "<" in raw and "</think>" in raw:  # "<" first: a much cheaper scan
            content = raw.split("</think>")[-1].lstrip("\n")
            reasoning = raw.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
        last = pos == len(msgs) - 1
        shown = content
        if pos > last_query and (last or reasoning):
            b.control(_ASSISTANT, m.index)
            b.control("<think>\n", m.index, True)
            b.content(reasoning.strip("\n"), m.index, True)
            b.control("\n</think>\n\n", m.index, True)
            # the official template prints the content without its leading newlines but
            # tests the unstripped content before the first call (a "\n" reply still adds one)
            shown = content.lstrip("\n")
        elif not m.tool_calls:  # the common reply: one turn
            b.turn(_ASSISTANT, content, IM_END, "\n", m.index, True)
            return
        else:
            b.control(_ASSISTANT, m.index)
        b.content(shown, m.index, True)
        for j, call in enumerate(m.tool_calls):
            call = function_call(self.name, m, call, j)
            if j > 0 or content:
                b.control("\n", m.index, True)
            hermes_call(b, m.index, call.name, call.arguments_json)
        b.control(IM_END, m.index, True)
        b.control("\n", m.index)

    def _generation_prompt(self, b: SegmentBuilder, ctx: RenderContext) -> None:
        b.control(_ASSISTANT)
        if ctx.options.get("enable_thinking") is False:
            b.control("<think>\n\n</think>\n\n")


class QwQTemplate(_QwenToolsBase):
    """QwQ-32B: the generation prompt opens ``<think>``; history replies lose their thinking.

    Reasoning of the current turn (after the last user message) that the official template
    would drop (``reasoning_content``, text before ``</think>`` of a non-final reply) is refused.
    """

    name = "qwq"
    history = EARLIER_THINKING_DROPPED
    aliases = ("qwq-32b", "qwq32b")
    model_ids = ("Qwen/QwQ-32B", "Qwen/QwQ-32B-AWQ")
    model_patterns = (r"qwq(?!.*preview)",)
    description = (
        "QwQ-32B: ChatML, generation prompt '<|im_start|>assistant\\n<think>\\n', "
        "thinking stripped from earlier replies, Hermes-style tools."
    )
    source = "official Jinja: Qwen-QwQ-32B.jinja"
    #: The official template (``Qwen-QwQ-32B.jinja``, llama.cpp's copy of QwQ's template)
    #: closes the think block unless ``enable_thinking`` is true, so the default here is False
    #: like the file's undefined variable; pass ``enable_thinking=True`` for the open
    #: ``<think>\n`` prompt of the original Hugging Face template.
    official_templates = ("Qwen-QwQ-32B.jinja",)
    supports_reasoning = True
    reasoning_parser_class = Qwen3ThinkParser
    default_options: ClassVar[Mapping[str, Any]] = {"enable_thinking": False}
    generation_config = GenerationConfig(
        session_len=131072,
        stop_words=(IM_END, ENDOFTEXT),
        temperature=0.6,
        top_p=0.95,
        top_k=40,
        extra={"min_p": 0.0},
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        refuse_reasoning_after_last_user(self.name, conv)  # the official template never writes it
        return super().render_conversation(conv, ctx)

    def _assistant(
        self, b: SegmentBuilder, msgs: Sequence[Message], pos: int, last_query: int
    ) -> None:
        m = msgs[pos]
        last = pos == len(msgs) - 1
        if not m.tool_calls or not last:
            text = require_text(self.name, m)
        else:
            text = m.content or ""
        content = text if last else text.split("</think>")[-1].lstrip("\n")
        if not last and "</think>" in text and all(x.role != "user" for x in msgs[pos + 1 :]):
            refuse_think_cut(self.name, m, content)  # a reply after the last user message
        if not m.tool_calls:
            chatml_turn(b, "assistant", content, m.index, trained=True)
        else:
            self._call_turn(b, m, content)

    def _generation_prompt(self, b: SegmentBuilder, ctx: RenderContext) -> None:
        b.control(f"{IM_START}assistant\n<think>\n")
        if not ctx.option("enable_thinking"):
            b.control("</think>")


QWEN25 = Qwen25Template()
QWEN3 = Qwen3Template()
QWQ = QwQTemplate()

_IM = RoleFormat
QWEN = SpecTemplate(
    TemplateSpec(
        name="qwen",
        aliases=("qwen-7b-chat", "qwen1", "qwen1.5", "qwen2", "qwen-chatml"),
        model_ids=(
            "Qwen/Qwen-1_8B-Chat",
            "Qwen/Qwen-7B-Chat",
            "Qwen/Qwen-14B-Chat",
            "Qwen/Qwen-72B-Chat",
            "Qwen/Qwen2-0.5B-Instruct",
            "Qwen/Qwen2-1.5B-Instruct",
            "Qwen/Qwen2-7B-Instruct",
            "Qwen/Qwen2-72B-Instruct",
        ),
        # Qwen2.5-VL's own template is this format for text-only chats (images are not supported).
        model_patterns=(
            r"^qwen-.*chat",
            r"qwen1\.5.*chat",
            r"^qwen2-.*instruct",
            r"qwen2\.?5-vl.*instruct",
        ),
        description=(
            "Qwen (1), Qwen1.5 and Qwen2 chat: plain ChatML with the default system prompt "
            "'You are a helpful assistant.'"
        ),
        source="official Jinja of Qwen2-Instruct (ollama qwen2 GGUF); LMDeploy Qwen7BChat",
        roles={
            "system": _IM(f"{IM_START}system\n", IM_END, "\n"),
            "user": _IM(f"{IM_START}user\n", IM_END, "\n"),
            "assistant": _IM(f"{IM_START}assistant\n", IM_END, "\n"),
            "tool": _IM(f"{IM_START}tool\n", IM_END, "\n"),
        },
        default_system="You are a helpful assistant.",
        control_tokens=QWEN_CONTROL_TOKENS,
        generation_config=GenerationConfig(
            session_len=8192,
            stop_words=(IM_END, IM_START, ENDOFTEXT),
            temperature=0.7,
            top_p=0.8,
            top_k=20,
            repetition_penalty=1.05,
        ),
    )
)
#: The Qwen2-Instruct template (as stored in ollama's qwen2 GGUF) is exactly this format.
QWEN.official_templates = ("ollama-qwen2-0.5b.jinja",)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (QWEN25, QWEN3, QWQ, QWEN)
