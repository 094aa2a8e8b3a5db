"""Microsoft Phi chat formats: Phi-3 / Phi-3.5 (``<|user|>…<|end|>``) and Phi-4 (``<|im_start|>…<|im_sep|>``)."""

from __future__ import annotations

from typing import ClassVar

from ...config import GenerationConfig
from ...errors import UnsupportedFeatureError, ValidationError
from ...protocol import Conversation, Message
from ...segments import Segment
from ...template import RenderContext, Template
from ..chatml.markers import ENDOFTEXT, IM_END, IM_START
from .markers import ASSISTANT, END, IM_SEP, SYSTEM, USER


def _check_plain(template: Template, m: Message) -> None:
    """Phi templates have no tool syntax and need string content."""
    if m.tool_calls or m.role == "tool":
        raise UnsupportedFeatureError(
            f"template {template.name!r} has no tool-call or tool-result format",
            index=m.index,
            field="tool_calls" if m.tool_calls else "role",
        )
    if m.content is None:
        raise ValidationError(
            f"template {template.name!r} needs string content", index=m.index, field="content"
        )


class Phi3(Template):
    """Phi-3 mini (June 2024 update): ``<|role|>\\ncontent<|end|>\\n`` turns.

    Without a generation prompt the official template ends with the EOS token
    ``<|endoftext|>``.
    """

    name = "phi3"
    aliases: tuple[str, ...] = ("phi-3", "phi3-mini")
    model_ids: tuple[str, ...] = (
        "microsoft/Phi-3-mini-4k-instruct",
        "microsoft/Phi-3-mini-128k-instruct",
    )
    model_patterns: tuple[str, ...] = (r"phi-?3",)
    description = "Phi-3: <|system|>/<|user|>/<|assistant|> turns closed by <|end|>."
    source = "official Jinja: ollama-phi3-3.8b.jinja (GGUF of microsoft/Phi-3-mini-4k-instruct)"
    official_templates: tuple[str, ...] = ("ollama-phi3-3.8b.jinja",)
    control_tokens = (SYSTEM, USER, ASSISTANT, END, ENDOFTEXT)
    generation_config = GenerationConfig(
        session_len=4096,
        stop_words=(END, ENDOFTEXT, ASSISTANT),
    )
    eos = ENDOFTEXT
    #: Phi-3.5 skips a system message whose content is empty.
    skip_empty_system: ClassVar[bool] = False

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        for m in conv.messages:
            if m.role == "system" and self.skip_empty_system and not m.content:
                continue
            _check_plain(self, m)
            trained = m.role == "assistant"
            b.control(f"<|{m.role}|>\n", m.index)
            b.content(m.text, m.index, trained)
            b.control(END, m.index, trained)
            b.control("\n", m.index)
        b.control("<|assistant|>\n" if ctx.add_generation_prompt else self.eos)
        return b.segments


class Phi35(Phi3):
    """Phi-3.5 mini: as Phi-3, but an empty system message is left out."""

    name = "phi3.5"
    aliases = ("phi-3.5", "phi3_5", "phi35")
    model_ids = ("microsoft/Phi-3.5-mini-instruct",)
    model_patterns = (r"phi-?3\.5",)
    description = "Phi-3.5: like Phi-3; an empty system message is dropped."
    source = "official Jinja: microsoft-Phi-3.5-mini-instruct.jinja"
    official_templates = ("microsoft-Phi-3.5-mini-instruct.jinja",)
    generation_config = Phi3.generation_config.replace(session_len=131072)
    skip_empty_system = True


class Phi4(Template):
    """Phi-4 (14B): ``<|im_start|>role<|im_sep|>content<|im_end|>`` with no newlines.

    The official template writes ``<|im_start|>assistant<|im_sep|>`` after every user
    turn, whether or not a generation prompt is requested.
    """

    name = "phi4"
    aliases = ("phi-4",)
    model_ids = ("microsoft/phi-4",)
    model_patterns = (r"^phi-?4$", r"^phi-?4-(?!mini)")
    description = (
        "Phi-4: <|im_start|>role<|im_sep|>…<|im_end|>; the assistant header follows each user turn."
    )
    source = (
        "official Jinja: llamacpp-phi-4.jinja (microsoft/phi-4, from llama.cpp's template tests)"
    )
    official_templates = ("llamacpp-phi-4.jinja",)
    control_tokens = (IM_START, IM_SEP, IM_END, ENDOFTEXT)
    generation_config = GenerationConfig(
        session_len=16384,
        stop_words=(IM_END, ENDOFTEXT),
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        for m in conv.messages:
            _check_plain(self, m)
            if m.role == "system":
                b.turn("<|im_start|>system<|im_sep|>", m.text, IM_END, "", m.index)
            elif m.role == "user":
                b.turn(
                    "<|im_start|>user<|im_sep|>",
                    m.text,
                    "<|im_end|><|im_start|>assistant<|im_sep|>",
                    "",
                    m.index,
                )
            else:
                b.content(m.text, m.index, True)
                b.control(IM_END, m.index, True)
        return b.segments


PHI3 = Phi3()
PHI35 = Phi35()
PHI4 = Phi4()

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (PHI3, PHI35, PHI4)
