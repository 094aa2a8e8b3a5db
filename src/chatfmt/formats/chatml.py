"""ChatML and the other simple formats of the ChatML overview seed, as declarative specs."""

from __future__ import annotations

from ..config import GenerationConfig
from ..registry import register
from ..spec import RoleFormat, TemplateSpec

_IM = RoleFormat

CHATML = register(
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

ZEPHYR = register(
    TemplateSpec(
        name="zephyr",
        aliases=("starchat", "zephyr-style"),
        model_ids=("HuggingFaceH4/zephyr-7b-beta", "HuggingFaceH4/starchat-beta"),
        model_patterns=(r"zephyr", r"starchat"),
        description="Zephyr/StarChat style: <|system|>/<|user|>/<|assistant|> turns closed by an end marker.",
        source="seed: ChatML overview (another ChatML, <|end|> marker)",
        roles={
            "system": _IM("<|system|>\n", "<|end|>", "\n"),
            "user": _IM("<|user|>\n", "<|end|>", "\n"),
            "assistant": _IM("<|assistant|>\n", "<|end|>", "\n"),
        },
        control_tokens=("<|system|>", "<|user|>", "<|assistant|>", "<|end|>"),
        generation_config=GenerationConfig(stop_words=("<|end|>",)),
    )
)

HUMAN_ASSISTANT = register(
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
