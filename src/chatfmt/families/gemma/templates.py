"""Google Gemma chat formats: Gemma 1/2 (no system role) and Gemma 3 (system folded into the first user turn).

Both wrap turns as ``<start_of_turn>{role}\\n{content|trim}<end_of_turn>\\n`` with the
assistant role spelled ``model``, and require user/assistant alternation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from ...jinja.packaged import PackagedTemplate
from ...protocol import Conversation, Message
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template, refuse_system_without_user
from .markers import BOS, END_OF_TURN, EOS, START_OF_TURN, TOOL_RESPONSE_OPEN, TURN_CLOSE
from .parser import Gemma4Parser, Gemma4Reasoning

_START = START_OF_TURN
_END = END_OF_TURN
_ALTERNATE = "conversation roles must alternate user/assistant/user/assistant/..."


class _GemmaBase(Template):
    """Shared Gemma rendering; subclasses choose how a leading system message is handled."""

    bos = BOS
    control_tokens = (BOS, EOS, _START, _END)
    #: ``"reject"`` (Gemma 1/2) or ``"fold"`` (Gemma 3: ``system + "\\n\\n"`` before the first turn).
    system_handling: ClassVar[str] = "reject"

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        msgs = list(conv.messages)
        b = ctx.builder()
        b.control(self.bos)
        prefix: Message | None = None
        if msgs and msgs[0].role == "system":
            if self.system_handling == "fold":
                prefix = msgs.pop(0)
                refuse_system_without_user(self.name, prefix, msgs)
            elif ctx.option("merge_system_into_first_user"):
                # llama.cpp's Jinja workaround: system + "\n" + first message, trimmed as one.
                prefix = msgs.pop(0)
                if not msgs or msgs[0].role != "user":
                    raise RoleOrderError(
                        "merge_system_into_first_user needs a user message right after the system message",
                        index=prefix.index,
                        field="role",
                    )
            else:
                raise UnsupportedFeatureError(
                    f"System role not supported by {self.name!r} (pass merge_system_into_first_user=True "
                    "to fold it into the first user turn, as llama.cpp does)",
                    index=msgs[0].index,
                    field="role",
                )
        for pos, m in enumerate(msgs):
            self._check(m, pos)
            role = "model" if m.role == "assistant" else m.role
            trained = m.role == "assistant"
            b.control(f"{_START}{role}\n", m.index)
            if pos == 0 and prefix is not None:
                if self.system_handling == "fold":
                    b.content(prefix.text, prefix.index)
                    b.control("\n\n", prefix.index)
                    b.content(m.text.strip(), m.index, trained)
                else:
                    self._merged_content(b, prefix, m)
            else:
                b.content(m.text.strip(), m.index, trained)
            b.control(_END, m.index, trained)
            b.control("\n", m.index)
        if ctx.add_generation_prompt:
            b.control(f"{_START}model\n")
        return b.segments

    @staticmethod
    def _merged_content(b: SegmentBuilder, system: Message, user: Message) -> None:
        """Emit ``(system + "\\n" + user) | trim`` as per-message segments."""
        full = system.text + "\n" + user.text
        start = len(full) - len(full.lstrip())
        end = len(full.rstrip())
        cut = len(system.text)
        b.content(full[start : min(cut, end)], system.index)
        b.control(full[max(cut, start) : min(cut + 1, end)], system.index)
        b.content(full[max(cut + 1, start) : end], user.index)

    def _check(self, m: Message, pos: int) -> None:
        if m.tool_calls or m.role == "tool":
            raise UnsupportedFeatureError(
                f"template {self.name!r} has no tool-call or tool-result format",
                index=m.index,
                field="tool_calls" if m.tool_calls else "role",
            )
        if m.content is None:
            raise ValidationError(
                "Gemma templates need string content", index=m.index, field="content"
            )
        if (m.role == "user") != (pos % 2 == 0):
            raise RoleOrderError(_ALTERNATE, index=m.index, field="role")


_GEMMA_GEN = GenerationConfig(
    session_len=8192,
    stop_words=(END_OF_TURN, EOS),
    top_p=0.95,
    top_k=64,
    temperature=1.0,
)


class Gemma2(_GemmaBase):
    """Gemma 1, 1.1 and 2 instruction-tuned models: the system role is rejected.

    Option ``merge_system_into_first_user=True`` reproduces llama.cpp's Jinja path,
    which merges a leading system message into the first user turn as
    ``(system + "\\n" + user) | trim``.
    """

    name = "gemma2"
    aliases = ("gemma", "gemma-2", "gemma-it", "gemma1", "gemma-1.1")
    model_ids = (
        "google/gemma-2-2b-it",
        "google/gemma-2-9b-it",
        "google/gemma-2-27b-it",
        "google/gemma-7b-it",
        "google/gemma-2b-it",
        "google/gemma-1.1-7b-it",
        "google/gemma-1.1-2b-it",
    )
    model_patterns = (r"gemma-?2.*-it", r"gemma-?(1\.1-)?\d+b-it", r"^gemma-?2")
    description = "Gemma 1/2: <start_of_turn>user|model … <end_of_turn>; no system role."
    source = "official Jinja: google-gemma-2-2b-it.jinja"
    official_templates = ("google-gemma-2-2b-it.jinja", "llamacpp-google-gemma-7b-it.jinja")
    default_options: ClassVar[Mapping[str, Any]] = {"merge_system_into_first_user": False}
    generation_config = _GEMMA_GEN
    system_handling = "reject"


class Gemma3(_GemmaBase):
    """Gemma 3 instruction-tuned models: a leading system message becomes ``system\\n\\n`` before the first turn."""

    name = "gemma3"
    aliases = ("gemma-3",)
    model_ids = (
        "google/gemma-3-270m-it",
        "google/gemma-3-1b-it",
        "google/gemma-3-4b-it",
        "google/gemma-3-12b-it",
        "google/gemma-3-27b-it",
    )
    model_patterns = (r"gemma-?3",)
    description = "Gemma 3: like Gemma 2, system text folded into the first user turn."
    source = "official Jinja: ollama-gemma3-270m.jinja (GGUF of google/gemma-3-270m-it)"
    official_templates = ("ollama-gemma3-270m.jinja",)
    generation_config = _GEMMA_GEN.replace(session_len=32768)
    system_handling = "fold"


GEMMA2 = Gemma2()
GEMMA3 = Gemma3()

#: This module's templates, added to the registry in this order (see chatfmt.families).
#: Gemma 4 (official Jinja, rendered as is): ``<|turn>role\n…<turn|>``, tool calls
#: ``<|tool_call>call:NAME{…}<tool_call|>`` (the model then writes ``<|tool_response>`` and stops),
#: reasoning ``<|channel>thought\n…<channel|>``, ``enable_thinking`` puts ``<|think|>`` in the system turn.
_GEMMA4_GENERATION = GenerationConfig(
    stop_words=(TURN_CLOSE, TOOL_RESPONSE_OPEN, EOS),
    temperature=1.0,
    top_p=0.95,
    top_k=64,
    session_len=262144,
)
_GEMMA4_VARIABLES = {"bos_token": BOS, "eos_token": EOS}
GEMMA4 = PackagedTemplate(
    "google-gemma-4-31B-it.jinja",
    name="gemma4",
    model_ids=(
        "google/gemma-4-31B-it",
        "google/gemma-4-26B-A4B-it",
        "google/gemma-4-E4B-it",
        "google/gemma-4-E2B-it",
    ),
    aliases=("gemma-4",),
    tool_parser=Gemma4Parser,
    reasoning_parser=Gemma4Reasoning,
    generation=_GEMMA4_GENERATION,
    variables=_GEMMA4_VARIABLES,
    description="Gemma 4 (<|turn> turns, <|tool_call> calls, <|channel>thought reasoning)",
)
GEMMA4_INTERLEAVED = PackagedTemplate(
    "google-gemma-4-31B-it-interleaved.jinja",
    name="gemma4-interleaved",
    tool_parser=Gemma4Parser,
    reasoning_parser=Gemma4Reasoning,
    generation=_GEMMA4_GENERATION,
    variables=_GEMMA4_VARIABLES,
    description="Gemma 4 with reasoning kept between tool calls (interleaved thinking variant)",
)

TEMPLATES: tuple[Template, ...] = (GEMMA2, GEMMA3, GEMMA4, GEMMA4_INTERLEAVED)
