"""01.AI Yi chat models: plain ChatML without a default system prompt (LMDeploy's ``yi``)."""

from __future__ import annotations

from ...config import GenerationConfig
from ...spec import RoleFormat, SpecTemplate, TemplateSpec
from ...template import Template
from ..chatml.markers import ENDOFTEXT, IM_END, IM_START

_IM = RoleFormat

YI = SpecTemplate(
    TemplateSpec(
        name="yi",
        aliases=("yi-chat", "yi-1.5", "yi1.5"),
        model_ids=(
            "01-ai/Yi-6B-Chat",
            "01-ai/Yi-34B-Chat",
            "01-ai/Yi-1.5-6B-Chat",
            "01-ai/Yi-1.5-9B-Chat",
            "01-ai/Yi-1.5-34B-Chat",
        ),
        model_patterns=(r"^yi-.*chat", r"^yi-(6|9|34)b"),
        description="Yi chat: ChatML <|im_start|>role\\n…<|im_end|> turns, no default system prompt.",
        source="LMDeploy Yi template (ChatML); lmdeploy_template_cases.json",
        roles={
            "system": _IM("<|im_start|>system\n", IM_END, "\n"),
            "user": _IM("<|im_start|>user\n", IM_END, "\n"),
            "assistant": _IM("<|im_start|>assistant\n", IM_END, "\n"),
        },
        control_tokens=(IM_START, IM_END, ENDOFTEXT),
        generation_config=GenerationConfig(session_len=4096, stop_words=(IM_END, ENDOFTEXT)),
    )
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (YI,)
