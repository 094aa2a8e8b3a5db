"""ChatML and the plain Human/Assistant format of the ChatML overview seed, as declarative specs.

The seed's third format (``<|system|>`` … ``<|end|>``) is StarChat's: ``starchat`` in :mod:`chatfmt.families.misc`.
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...spec import RoleFormat, SpecTemplate, TemplateSpec
from ...template import Template

_IM = RoleFormat

CHATML = SpecTemplate(
    TemplateSpec(
        name="chatml",
        aliases=("openai-chatml", "chatml-v0"),
        description="OpenAI ChatML v0: <|im_start|>role\\n…<|im_end|> turns.",
        source="seed: ChatML overview (OpenAI ChatML v0)",
        roles={
            "system": _IM("<|im_start|>system\n", "<|im_end|>", "\n"),
            "user": _IM("<|im_start|>user\n", "<|im_end|>", "\n"),
            "assistant": _IM("<|im_start|>assistant\n", "<|im_end|>", "\n"),
            "tool": _IM("<|im_start|>tool\n", "<|im_end|>", "\n"),
        },
        control_tokens=("<|im_start|>", "<|im_end|>"),
        generation_config=GenerationConfig(stop_words=("<|im_end|>",)),
    )
)

HUMAN_ASSISTANT = SpecTemplate(
    TemplateSpec(
        name="human-assistant",
        aliases=("human_assistant", "anthropic-hh", "plain"),
        description="Plain dialogue data: system text, then 'Human: '/'Assistant: ' lines.",
        source="seed: ChatML overview (simple dialogue data format)",
        roles={
            "system": _IM("", "", "\n\n"),
            "user": _IM("Human: ", "", "\n"),
            # The reply's newline ends the turn: the model writes it, so it is trained.
            "assistant": _IM("Assistant: ", "\n", ""),
        },
        generation_config=GenerationConfig(stop_words=("\nHuman:",)),
    )
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (CHATML, HUMAN_ASSISTANT)
