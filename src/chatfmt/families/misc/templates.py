"""Simple families as declarative specs: Baichuan2, Vicuna (and its llama.cpp variants), Zephyr, StarChat.

``zephyr`` is the official HuggingFaceH4/zephyr-7b-beta template (turns closed by the
EOS token ``</s>``); the ChatML-overview seed's ``<|end|>`` variant is StarChat's format and
stays available as ``starchat`` (alias ``zephyr-seed``).
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...spec import RoleFormat, SpecTemplate, TemplateSpec
from ...template import Template
from .markers import ASSISTANT, END, EOS, RESERVED_106, RESERVED_107, SYSTEM, USER

_R = RoleFormat

BAICHUAN2 = SpecTemplate(
    TemplateSpec(
        name="baichuan2",
        aliases=("baichuan-2", "baichuan2-chat"),
        model_ids=(
            "baichuan-inc/Baichuan2-7B-Chat",
            "baichuan-inc/Baichuan2-13B-Chat",
        ),
        model_patterns=(r"baichuan-?2",),
        description="Baichuan2 chat: system text, then <reserved_106>user<reserved_107>assistant, no separators.",
        source="Baichuan2 generation_utils.build_chat_input (user_token_id 195, assistant_token_id 196); lmdeploy baichuan2",
        roles={
            "system": _R("", "", ""),
            "user": _R(RESERVED_106, "", ""),
            "assistant": _R(RESERVED_107, "", ""),
        },
        control_tokens=(RESERVED_106, RESERVED_107),
        generation_config=GenerationConfig(
            session_len=4096,
            stop_words=(EOS,),
            top_p=0.85,
            top_k=5,
            temperature=0.3,
            repetition_penalty=1.05,
        ),
    )
)

_VICUNA_SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the user's questions."
)

VICUNA = SpecTemplate(
    TemplateSpec(
        name="vicuna",
        aliases=("vicuna-v1.1", "vicuna_v1.1", "vicuna1.5"),
        model_ids=(
            "lmsys/vicuna-7b-v1.5",
            "lmsys/vicuna-13b-v1.5",
            "lmsys/vicuna-7b-v1.5-16k",
            "lmsys/vicuna-13b-v1.5-16k",
            "lmsys/vicuna-7b-v1.3",
            "lmsys/vicuna-13b-v1.3",
            "lmsys/vicuna-33b-v1.3",
        ),
        model_patterns=(r"vicuna", r"wizardlm-\d+b-v1\.0"),  # WizardLM v1.0 uses Vicuna 1.1
        description="Vicuna v1.1+ (FastChat): '{system} USER: … ASSISTANT: …</s>' with the default system prompt.",
        source="FastChat vicuna_v1.1 conversation template (lmsys/vicuna-*-v1.5 ship no Jinja template); lmdeploy vicuna",
        default_system=_VICUNA_SYSTEM,
        roles={
            "system": _R("", "", " "),
            "user": _R("USER: ", "", " "),
            "assistant": _R("ASSISTANT: ", EOS, ""),
        },
        generation_prompt="ASSISTANT:",
        control_tokens=(EOS,),
        generation_config=GenerationConfig(session_len=4096, stop_words=(EOS,)),
    )
)

VICUNA_NEWLINE = SpecTemplate(
    TemplateSpec(
        name="vicuna-newline",
        aliases=("vicuna-1.1-gguf", "eachadea-vicuna"),
        model_ids=("eachadea/vicuna-13b-1.1", "eachadea/vicuna-7b-1.1"),
        description="Vicuna 1.1 as in eachadea's Jinja template: 'USER: …\\nASSISTANT: …</s>\\n'.",
        source="official Jinja: llamacpp-eachadea-vicuna-13b-1.1.jinja",
        roles={
            "system": _R("", "", "\n\n"),
            "user": _R("USER: ", "", "\n"),
            "assistant": _R("ASSISTANT: ", EOS, "\n"),
        },
        generation_prompt="ASSISTANT:",
        control_tokens=(EOS,),
        generation_config=GenerationConfig(session_len=2048, stop_words=(EOS,)),
    )
)

ORCA_VICUNA = SpecTemplate(
    TemplateSpec(
        name="orca-vicuna",
        aliases=("orca_vicuna",),
        description="Orca-Vicuna: 'SYSTEM: …\\nUSER: …\\nASSISTANT: …</s>\\n'.",
        source="official Jinja: llamacpp-Orca-Vicuna.jinja",
        roles={
            "system": _R("SYSTEM: ", "", "\n"),
            "user": _R("USER: ", "", "\n"),
            "assistant": _R("ASSISTANT: ", EOS, "\n"),
        },
        generation_prompt="ASSISTANT:",
        control_tokens=(EOS,),
        generation_config=GenerationConfig(session_len=4096, stop_words=(EOS,)),
    )
)

ZEPHYR = SpecTemplate(
    TemplateSpec(
        name="zephyr",
        aliases=("zephyr-7b", "tinyllama-chat"),
        model_ids=(
            "HuggingFaceH4/zephyr-7b-beta",
            "HuggingFaceH4/zephyr-7b-alpha",
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        ),
        model_patterns=(r"zephyr", r"tinyllama.*chat"),
        description="Zephyr: <|system|>/<|user|>/<|assistant|> turns, each closed by </s> and a newline.",
        source="official Jinja: ollama-tinyllama-1.1b.jinja (the Zephyr template, shared by TinyLlama-Chat)",
        roles={
            "system": _R("<|system|>\n", EOS, "\n"),
            "user": _R("<|user|>\n", EOS, "\n"),
            "assistant": _R("<|assistant|>\n", EOS, "\n"),
        },
        generation_prompt="<|assistant|>\n",
        control_tokens=(SYSTEM, USER, ASSISTANT, EOS),
        generation_config=GenerationConfig(
            session_len=4096, stop_words=(EOS,), top_p=0.95, top_k=50, temperature=0.7
        ),
    )
)

STARCHAT = SpecTemplate(
    TemplateSpec(
        name="starchat",
        aliases=("zephyr-seed", "zephyr-style", "starchat-beta"),
        model_ids=("HuggingFaceH4/starchat-beta", "HuggingFaceH4/starchat-alpha"),
        model_patterns=(r"starchat",),
        description="StarChat (the seed's 'another ChatML'): <|system|>/<|user|>/<|assistant|> turns closed by <|end|>.",
        source="seed: ChatML overview (another ChatML, <|end|> marker)",
        roles={
            "system": _R("<|system|>\n", END, "\n"),
            "user": _R("<|user|>\n", END, "\n"),
            "assistant": _R("<|assistant|>\n", END, "\n"),
        },
        control_tokens=(SYSTEM, USER, ASSISTANT, END),
        generation_config=GenerationConfig(stop_words=(END,)),
    )
)

# Specs carry no file names; the official Jinja files these specs reproduce byte for byte:
VICUNA_NEWLINE.official_templates = ("llamacpp-eachadea-vicuna-13b-1.1.jinja",)
ORCA_VICUNA.official_templates = ("llamacpp-Orca-Vicuna.jinja",)
ZEPHYR.official_templates = ("ollama-tinyllama-1.1b.jinja",)
# Zephyr's and TinyLlama's tokenizers have no special tokens for its role markers:
ZEPHYR.text_control_tokens = (SYSTEM, USER, ASSISTANT)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (BAICHUAN2, VICUNA, VICUNA_NEWLINE, ORCA_VICUNA, ZEPHYR, STARCHAT)
