"""Conformance with LMDeploy's own chat-template cases (``lmdeploy_template_cases.json``).

Every recorded LMDeploy call is reproduced with chatfmt (``get_prompt(prompt, sequence_start)``
is one user message; ``messages2prompt`` renders the messages with LMDeploy's implicit
generation prompt; ``meta_instruction`` becomes a system message; ``capability='completion'``
returns the prompt unchanged). chatfmt's output must equal LMDeploy's, or the case is a
known LMDeploy deviation listed in ``LMDEPLOY_DEVIATIONS`` with its reason. A deviation is
itself checked: chatfmt must then equal the model's OFFICIAL template (rendered by
transformers' own Jinja renderer) or, for formats whose source of truth is a seed or
LMDeploy itself, the LMDeploy output with the listed fix applied. Templates chatfmt does not
cover (vision-language models, formats without a public text template) are in
``OUT_OF_SCOPE`` with their reasons. The verdict of every case is listed in docs/lmdeploy.md.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

import chatfmt
from chatfmt.errors import ChatFmtError, TemplateNotFoundError, ValidationError
from chatfmt.formats.glm import python_literal
from chatfmt.formats.internlm import INTERNLM_META_INSTRUCTION
from chatfmt.protocol import validate_conversation
from chatfmt.template import Template
from test_glm import _glm4_official_messages

from _support import ROOT, SHARED, official_render

DATA = ROOT / "src" / "chatfmt" / "data" / "templates"
CASES_FILE = SHARED / "reference" / "lmdeploy_template_cases.json"
#: The date LMDeploy's Llama 3.1/3.2 templates print ("Today Date: 26 Jul 2024").
NOW = "2024-07-26"

# --------------------------------------------------------------------------- mapping
#: chatfmt's completion (base-model) behaviour: the prompt text is returned unchanged.
COMPLETION = "internlm-7b"

#: LMDeploy template name -> chatfmt template name.
TEMPLATE_MAP: dict[str, str] = {
    "base": COMPLETION,
    "llama": COMPLETION,  # LMDeploy's 'llama' is BaseModel (plain completion)
    "baichuan2": "baichuan2",
    "chatglm3": "chatglm3",
    "deepseek": "deepseek-v2",
    "deepseek-coder": "deepseek-coder",
    "deepseek-r1": "deepseek-r1-distill-qwen",
    "deepseek-v3": "deepseek-v3",
    "gemma": "gemma2",
    "glm4": "glm4",
    "internlm": "internlm-chat-7b",
    "internlm2": "internlm2",
    "internlm3": "internlm3",
    "llama2": "llama2",
    "llama3": "llama3",
    "llama3_1": "llama3.1",
    "llama3_2": "llama3.2",
    "mistral": "mistral-v1",
    "mixtral": "mistral-v1",
    "phi-3": "phi3",
    "phi-4": "phi4",
    "qwen": "qwen",
    "qwen2d5": "qwen2.5",
    "qwen3": "qwen3",
    "qwq": "qwq",
    "vicuna": "vicuna",
    "wizardlm": "vicuna",  # LMDeploy's wizardlm is its Vicuna class (WizardLM v1.0 uses Vicuna 1.1)
    "yi": "yi",
}

_VL = "vision-language model: its prompts carry image/video placeholders; chatfmt renders text-only chat formats"
#: LMDeploy templates chatfmt does not provide, and why.
OUT_OF_SCOPE: dict[str, str] = {
    "chatglm": "ChatGLM2-6B ships no chat template (its tokenizer's build_prompt code writes "
    "'[Round n]\\n\\n问：…\\n\\n答：'); chatfmt covers ChatGLM3 and later",
    "codegeex4": "CodeGeeX4 is not implemented in chatfmt (a GLM-4 variant with a coding system prompt)",
    "codellama": "CodeLlama is not implemented: its base/python models are plain completion and its "
    "infilling mode (<PRE>/<SUF>/<MID>) is not a chat format; CodeLlama-Instruct uses the llama2 format",
    "cogvlm": _VL,
    "cogvlm2": _VL,
    "deepseek-vl": _VL,
    "deepseek-vl2": _VL,
    "gpt-oss": "gpt-oss (OpenAI Harmony format) is not implemented in chatfmt",
    "intern-s1": _VL + " (Intern-S1 is multimodal)",
    "interns1": _VL + " (Intern-S1 is multimodal)",
    "internlm-xcomposer2": _VL,
    "internlm-xcomposer2d5": _VL,
    "internvl-internlm2": _VL,
    "internvl-phi3": _VL,
    "internvl-zh": _VL,
    "internvl-zh-hermes2": _VL,
    "internvl2-internlm2": _VL,
    "internvl2-phi3": _VL,
    "internvl2_5": _VL,
    "llama4": _VL + " (Llama 4 is natively multimodal); not implemented in chatfmt",
    "llava-chatml": _VL,
    "llava-v1": _VL,
    "minicpm3": "MiniCPM3 is not implemented in chatfmt",
    "minicpmv-2d6": _VL,
    "molmo": _VL,
    "puyu": "LMDeploy's 'puyu' is an internal InternLM format with no public model or template",
    "qwen2d5-vl": _VL,
    "qwq_preview": "QwQ-32B-Preview is not implemented in chatfmt (chatfmt's qwq is QwQ-32B)",
    "solar": "SOLAR is not implemented in chatfmt",
    "ultracm": "UltraCM/UltraLM are not implemented in chatfmt",
    "ultralm": "UltraCM/UltraLM are not implemented in chatfmt",
    "yi-vl": _VL,
}
#: Out-of-scope names chatfmt still resolves (through a model-name pattern), and to what.
OUT_OF_SCOPE_RESOLVES = {
    "internvl-phi3": "phi3",  # chatfmt's phi3 pattern 'phi-?3' matches the name
    "internvl2-phi3": "phi3",
}
#: Cases without an LMDeploy template name (``template_instantiated_directly``).
OUT_OF_SCOPE_CASES = {
    "other:test_model_config[[fake meta_instruction]-qwen-7b]/0": "LMDeploy's generic "
    "BaseChatTemplate instantiated directly (all role markers empty): no model's format",
}

#: LMDeploy classes whose messages2prompt appends a new assistant header after a final
#: assistant message (the others leave that message open as a response prefix).
GENERATION_PROMPT_AFTER_ASSISTANT = {"baichuan2", "chatglm3", "glm4", "qwen2d5", "qwen3", "qwq"}

#: chatfmt options that reproduce LMDeploy's set-up: LMDeploy leaves the BOS token to the
#: tokenizer, and chatfmt's InternLM2/3 templates have a ``bos_token`` option for that.
CALL_OPTIONS: dict[str, dict[str, Any]] = {
    "internlm2": {"bos_token": ""},
    "internlm3": {"bos_token": ""},
    # LMDeploy's QwQ opens '<think>\n' like the original template; the reference file (and
    # chatfmt's default) closes the block unless enable_thinking is true.
    "qwq": {"enable_thinking": True},
}

#: chatfmt options reproducing LMDeploy's one-line tools dump in InternLM2's plugin system turn
#: (the seed's default layout is indented; see tests/test_internlm.py).
#: For ChatGLM3, the layout its own demo code writes (json.dumps(tools, indent=4)).
TOOLS_OPTIONS: dict[str, dict[str, Any]] = {
    "internlm2": {"tools_json": "compact", "plugin_prompt": "{prompt}"},
    "internlm3": {"tools_json": "compact", "plugin_prompt": "{prompt}"},
    "chatglm3": {"tools_json": "indent4"},
}

_DS = {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
_L2 = {"bos_token": "<s>", "eos_token": "</s>"}
_L3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "date_string": "26 Jul 2024"}
#: chatfmt template -> (its official Jinja file in chatfmt's data folder, template variables).
OFFICIAL: dict[str, tuple[str, dict[str, Any]]] = {
    "chatglm3": ("THUDM-chatglm3-6b.jinja", {}),
    "glm4": ("THUDM-glm-4-9b-chat.jinja", {}),
    "deepseek-v2": ("deepseek-ai-DeepSeek-V2-Chat.jinja", _DS),
    "deepseek-coder": (
        "deepseek-ai-deepseek-coder-33b-instruct.jinja",
        {**_DS, "eos_token": "<|EOT|>"},
    ),
    "deepseek-r1-distill-qwen": ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", _DS),
    "deepseek-v3": ("deepseek-ai-DeepSeek-V3.jinja", _DS),
    "gemma2": ("google-gemma-2-2b-it.jinja", {"bos_token": "<bos>", "eos_token": "<eos>"}),
    "internlm2": ("internlm-internlm2-chat-7b.jinja", _L2),
    "llama2": ("meta-llama-Llama-2-7b-chat-hf.jinja", _L2),
    "llama3": ("meta-llama-Meta-Llama-3-8B-Instruct.jinja", _L3),
    "llama3.1": ("meta-llama-Llama-3.1-8B-Instruct.jinja", _L3),
    "llama3.2": ("meta-llama-Llama-3.2-3B-Instruct.jinja", _L3),
    "mistral-v1": ("mistralai-Mistral-7B-Instruct-v0.2.jinja", _L2),
    "phi3": ("ollama-phi3-3.8b.jinja", {"bos_token": "<s>", "eos_token": "<|endoftext|>"}),
    "phi4": ("llamacpp-phi-4.jinja", {"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>"}),
    "qwen": ("ollama-qwen2-0.5b.jinja", {}),
    "qwen2.5": ("Qwen-Qwen2.5-7B-Instruct.jinja", {}),
    "qwen3": ("Qwen-Qwen3-0.6B.jinja", {}),
    "qwq": ("Qwen-QwQ-32B.jinja", {}),
}


# --------------------------------------------------------------------------- deviations
@dataclass(frozen=True)
class Deviation:
    """A known LMDeploy deviation and how chatfmt's different output is checked.

    ``check``: ``"official"`` (chatfmt == the official template's render of the same
    conversation, with ``fixes`` for what that Jinja cannot express; if the official
    template raises, chatfmt must raise too), ``"raises"``
    (chatfmt rejects the input with a ValidationError naming the message), ``"fixed"``
    (no official template: chatfmt == LMDeploy's output with ``fixes`` applied) or
    ``"completion"`` (chatfmt's completion behaviour: the message texts, unchanged).
    """

    reason: str
    check: str = "official"
    fixes: tuple[tuple[str, str], ...] = ()
    keys: str = ""  # the keys of :data:`R` the reason is made of


R = {
    "bos": "LMDeploy leaves the BOS token to the tokenizer; the official template writes it "
    "into the prompt text.",
    "strip": "The official template strips message content; LMDeploy keeps the spaces.",
    "space_after_inst": "LMDeploy ends Llama 2 turns with '[/INST] ' and writes replies without "
    "the official ' ' before and after them.",
    "llama2_default_system": "LMDeploy's llama2 adds Meta's long default system prompt; the "
    "official Llama 2 chat template has no default system prompt.",
    "llama3_date": "LMDeploy's llama3_1/llama3_2 add a default 'You are a helpful assistant.' "
    "system turn (with the 'Cutting Knowledge Date' header in messages2prompt, without it in "
    "get_prompt) and write a caller's system message without that header; the official "
    "templates always write the date header and add no default text.",
    "llama3_tools": "LMDeploy's llama3_1 writes its own '<function=…>' tool prompt in the system "
    "turn; the official Llama 3.1/3.2 template puts the JSON tool prompt in the first user turn "
    "and writes tool calls and 'ipython' results.",
    "mistral_spaces": "LMDeploy writes '[INST] … [/INST]reply' with no BOS and a system message "
    "as bare text; the official Mistral v0.2 template writes '<s> [INST] …', a space before "
    "each reply, and folds the system message into the first user turn.",
    "glm_generation_prompt": "LMDeploy's prompt ends '<|assistant|>\\n' (ChatGLM3: "
    "'<|assistant|>\\n '); the official templates end at '<|assistant|>' and the model writes "
    "the metadata line itself.",
    "glm_later_turn": "LMDeploy's follow-up turn starts with '<|user|>'; in chatfmt that token is "
    "the stop token that ended the previous reply (held by the engine), so the follow-up "
    "starts after it.",
    "glm_tools": "LMDeploy's chatglm3/glm4 drop the tools and the tool call and write the tool "
    "result as an assistant turn; chatfmt renders the tool formats of GLM-4's official template "
    "and of the ChatGLM3 seed.",
    "gemma_system": "LMDeploy writes a system message as bare text before the first turn; the "
    "official Gemma 2 template rejects the system role (chatfmt raises; "
    "merge_system_into_first_user=True folds it in as llama.cpp does).",
    "gemma_later_turn": "The official Gemma template writes '\\n' after '<end_of_turn>'; "
    "LMDeploy's follow-up turn leaves that newline out.",
    "phi_later_turn": "The official Phi-3 template writes '\\n' after '<|end|>'; LMDeploy's "
    "follow-up turn leaves that newline out.",
    "phi4_format": "LMDeploy's phi-4 reuses its Phi-3 class ('<|user|>\\n…<|end|>'); the "
    "official Phi-4 template uses '<|im_start|>user<|im_sep|>…<|im_end|>'.",
    "internlm_default_system": "LMDeploy's internlm2/internlm3 add their meta_instruction as a "
    "system turn when the first message is not a system one; the official InternLM2 template "
    "has no default system prompt.",
    "internlm_environment_name": "LMDeploy writes plugin results as '<|im_start|>environment\\n'; "
    "the InternLM2 seed format writes 'environment name=<|plugin|>' (chatfmt follows the seed).",
    "internlm_tools_json": "LMDeploy dumps the tools with json.dumps on one line; chatfmt's "
    "default is the seed's layout of the function objects.",
    "unanswered_results": "LMDeploy renders tool/environment messages that answer no tool call; "
    "chatfmt requires a tool result to follow an assistant tool call (ValidationError naming "
    "the message). The structured form of this case is checked in tests/test_internlm.py.",
    "deepseek_system": "LMDeploy's deepseek writes '\\n\\n' before the first user turn even "
    "without a system message and omits BOS; the official DeepSeek-V2 template writes BOS and "
    "no separator without a system message.",
    "prefix_truncation": "LMDeploy strips len(eoa + separator) characters from a final "
    "assistant message that has no such suffix, cutting its last character ('Hi' -> 'H').",
    "coder_bos": "LMDeploy leaves the BOS token to the tokenizer; the official DeepSeek-Coder "
    "template writes it into the prompt text.",
    "r1_think": "LMDeploy's deepseek-r1 appends '<think>\\n' only in messages2prompt (even after a "
    "final assistant message) and never in get_prompt; the official R1-Distill template opens "
    "'<think>\\n' in every generation prompt and closes it with '</think>' unless "
    "enable_thinking is set (chatfmt's default: enable_thinking=False).",
    "ds_tools": "LMDeploy drops the tool call and writes the tool result as bare text; chatfmt "
    "renders the official DeepSeek tool-call and tool-output blocks.",
    "ds_empty_content": "The official DeepSeek-V3 template writes tool calls only for content "
    "null and drops them for content ''; chatfmt treats '' like null (documented workaround), so "
    "the fix puts back the call block the official template writes for null.",
    "qwen3_system": "LMDeploy's qwen3/qwq write an empty system turn when there is no system "
    "message; the official Qwen3/QwQ templates write none.",
    "qwen3_reasoning": "After the last user turn the official Qwen3 template writes an empty "
    "'<think>\\n\\n</think>\\n\\n' block before a final assistant message; LMDeploy does not.",
    "qwq_think": "LMDeploy's qwq get_prompt does not open '<think>\\n'; the official QwQ template "
    "opens it in every generation prompt.",
    "qwen3_tools_system": "LMDeploy's qwen3 writes '\\n\\n' before '# Tools' when there is no "
    "system message; the official Qwen3 template does not.",
    "qwen_empty_content": "LMDeploy writes '\\n' + content before the tool calls even when the "
    "content is empty; the official Qwen2.5/Qwen3/QwQ templates write no '\\n' for empty "
    "content.",
    "no_tools": "The format has no tool-call protocol: LMDeploy silently drops the tool call and "
    "writes the tool result as bare text; chatfmt raises UnsupportedFeatureError naming the "
    "message (or the tools field).",
    "no_tools_official": "The format has no tool-call protocol: LMDeploy drops the tool call and "
    "writes the tool result as bare text, the official template drops the call (and renders or "
    "rejects the 'tool' role); chatfmt raises UnsupportedFeatureError instead of losing it.",
    "system_prefix_override": "LMDeploy's test passes system='Provide answers in Python', which "
    "replaces the template's system-role *marker* (not a system message) and yields a prompt no "
    "model was trained on (the test only asserts '!='); chatfmt has no option to replace a role "
    "marker, so the fix restores the default marker.",
    "voice": "capability='voice' is unknown to LMDeploy's Vicuna class, which then skips the "
    "strip of the trailing space after 'ASSISTANT:'; chatfmt renders the chat format.",
    "base_lists": "LMDeploy's BaseModel returns None for a message list (it only completes a "
    "plain prompt); chatfmt's completion templates raise UnsupportedFeatureError for several "
    "messages or tools (their roles would be lost).",
}


def _dev(keys: str, check: str = "official", fixes: tuple[tuple[str, str], ...] = ()) -> Deviation:
    """A deviation with the reasons ``keys`` ('a+b') of :data:`R`."""
    return Deviation(" ".join(R[k] for k in keys.split("+")), check, fixes, keys)


def _rows(lms: str, keys: str, deviation: Deviation) -> dict[str, Deviation]:
    return {f"matrix:{lm}/{k}": deviation for lm in lms.split() for k in keys.split()}


_CONV = "llamacpp_conversation no_system_conversation"
_ALL_BUT_TOOLS = _CONV + " assistant_last_prefix get_prompt_first_turn get_prompt_later_turn"
_SYS = "Provide answers in Python"
_NO_META = (f"<|im_start|>system\n{INTERNLM_META_INSTRUCTION}<|im_end|>\n", "")
_ENV_NAME = ("<|im_start|>environment\n", "<|im_start|>environment name=<|plugin|>\n")

#: case id -> why LMDeploy's output differs from chatfmt's (and how chatfmt is checked).
LMDEPLOY_DEVIATIONS: dict[str, Deviation] = {
    # ---------------------------------------------------------------- expected_output_cases
    "expected:test_messages2prompt4internlm2_chat/0": _dev("unanswered_results", "raises"),
    "expected:test_messages2prompt4internlm2_chat/1": _dev("unanswered_results", "raises"),
    "expected:test_internlm_tool_call/0": _dev("internlm_environment_name", "fixed", (_ENV_NAME,)),
    "expected:test_llama3_1/0": _dev("llama3_tools"),
    "expected:test_qwen2d5/6": _dev("qwen_empty_content"),
    "expected:test_qwen2d5/8": _dev("unanswered_results", "raises"),
    # ---------------------------------------------------------------- other_recorded_outputs
    "other:test_model_config[[fake meta_instruction]-llama2]/0": _dev("bos+space_after_inst"),
    "other:test_vicuna/0": _dev("system_prefix_override", "fixed", ((_SYS, ""),)),
    "other:test_vicuna/2": _dev("voice", "fixed", (("ASSISTANT: ", "ASSISTANT:"),)),
    "other:test_prefix_response/0": _dev("internlm_default_system"),
    "other:test_internlm_chat/0": _dev("system_prefix_override", "fixed", ((_SYS, "<|System|>:"),)),
    "other:test_llama2/0": _dev("bos+space_after_inst"),
    "other:test_llama2/1": _dev("space_after_inst"),
    "other:test_llama2/2": _dev("llama2_default_system+bos+space_after_inst"),
    # ---------------------------------------------------------------- registry_matrix
    **_rows(
        "base",
        _CONV + " assistant_last_prefix tools_conversation",
        _dev("base_lists", "raises"),
    ),
    **_rows(
        "llama",
        _CONV + " assistant_last_prefix tools_conversation",
        _dev("base_lists", "raises"),
    ),
    **_rows("baichuan2", "tools_conversation", _dev("no_tools", "raises")),
    **_rows(
        "chatglm3",
        _CONV + " assistant_last_prefix get_prompt_first_turn",
        _dev("glm_generation_prompt"),
    ),
    **_rows("chatglm3", "get_prompt_later_turn", _dev("glm_later_turn")),
    # ChatGLM3's official Jinja cannot print the call's metadata line; the seed format adds it
    **_rows(
        "chatglm3",
        "tools_conversation",
        _dev(
            "glm_tools",
            fixes=(("<|assistant|>\n ```python", "<|assistant|>get_weather\n ```python"),),
        ),
    ),
    **_rows(
        "glm4",
        _CONV + " assistant_last_prefix get_prompt_first_turn",
        _dev("glm_generation_prompt"),
    ),
    **_rows("glm4", "get_prompt_later_turn", _dev("glm_later_turn")),
    **_rows("glm4", "tools_conversation", _dev("glm_tools")),
    **_rows("deepseek", "llamacpp_conversation", _dev("bos")),
    **_rows("deepseek", "no_system_conversation get_prompt_first_turn", _dev("deepseek_system")),
    **_rows("deepseek", "assistant_last_prefix", _dev("deepseek_system+prefix_truncation")),
    **_rows("deepseek", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows(
        "deepseek-coder", _CONV + " assistant_last_prefix get_prompt_first_turn", _dev("coder_bos")
    ),
    **_rows("deepseek-coder", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("deepseek-r1", _ALL_BUT_TOOLS, _dev("r1_think")),
    **_rows("deepseek-r1", "tools_conversation", _dev("ds_tools")),
    **_rows(
        "deepseek-v3",
        "tools_conversation",
        _dev(
            "ds_tools+ds_empty_content",
            fixes=(
                (
                    "<｜Assistant｜><｜end▁of▁sentence｜>",
                    "<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
                    'get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜>',
                ),
            ),
        ),
    ),
    **_rows("gemma", "llamacpp_conversation", _dev("gemma_system")),
    **_rows("gemma", "no_system_conversation", _dev("bos+strip")),
    **_rows("gemma", "assistant_last_prefix get_prompt_first_turn", _dev("bos")),
    **_rows("gemma", "get_prompt_later_turn", _dev("gemma_later_turn")),
    **_rows("gemma", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("internlm", "tools_conversation", _dev("no_tools", "raises")),
    **_rows(
        "internlm2",
        "no_system_conversation assistant_last_prefix get_prompt_first_turn",
        _dev("internlm_default_system"),
    ),
    **_rows(
        "internlm2 internlm3",
        "tools_conversation",
        _dev("internlm_default_system+internlm_environment_name", "fixed", (_NO_META, _ENV_NAME)),
    ),
    **_rows(
        "internlm3",
        "no_system_conversation assistant_last_prefix get_prompt_first_turn",
        _dev("internlm_default_system", "fixed", (_NO_META,)),
    ),
    **_rows("llama2", "llamacpp_conversation", _dev("bos+space_after_inst+strip")),
    **_rows(
        "llama2", "no_system_conversation", _dev("llama2_default_system+bos+space_after_inst+strip")
    ),
    **_rows(
        "llama2",
        "assistant_last_prefix get_prompt_first_turn",
        _dev("llama2_default_system+bos+space_after_inst"),
    ),
    **_rows("llama2", "get_prompt_later_turn", _dev("space_after_inst")),
    **_rows("llama2", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("llama3", _CONV, _dev("strip")),
    **_rows("llama3", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("llama3_1 llama3_2", _CONV, _dev("llama3_date+strip")),
    **_rows(
        "llama3_1 llama3_2", "assistant_last_prefix get_prompt_first_turn", _dev("llama3_date")
    ),
    **_rows("llama3_1", "tools_conversation", _dev("llama3_tools")),
    **_rows("llama3_2", "tools_conversation", _dev("llama3_tools")),
    **_rows("mistral", _ALL_BUT_TOOLS, _dev("mistral_spaces")),
    **_rows("mistral", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("mixtral", _ALL_BUT_TOOLS, _dev("mistral_spaces")),
    **_rows("mixtral", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("phi-3", "get_prompt_later_turn", _dev("phi_later_turn")),
    **_rows("phi-3", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("phi-4", _ALL_BUT_TOOLS, _dev("phi4_format")),
    **_rows("phi-4", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("qwen", "tools_conversation", _dev("no_tools_official", "raises")),
    **_rows("qwen2d5", "tools_conversation", _dev("qwen_empty_content")),
    **_rows("qwen3", "no_system_conversation get_prompt_first_turn", _dev("qwen3_system")),
    **_rows("qwen3", "assistant_last_prefix", _dev("qwen3_system+qwen3_reasoning")),
    **_rows("qwen3", "tools_conversation", _dev("qwen3_tools_system+qwen_empty_content")),
    **_rows("qwq", "no_system_conversation assistant_last_prefix", _dev("qwen3_system")),
    **_rows("qwq", "get_prompt_first_turn", _dev("qwen3_system+qwq_think")),
    **_rows("qwq", "get_prompt_later_turn", _dev("qwq_think")),
    **_rows("qwq", "tools_conversation", _dev("qwen_empty_content")),
    **_rows(
        "vicuna",
        "assistant_last_prefix",
        _dev("prefix_truncation", "fixed", (("ASSISTANT: H", "ASSISTANT: Hi"),)),
    ),
    **_rows("vicuna", "tools_conversation", _dev("no_tools", "raises")),
    **_rows(
        "wizardlm",
        "assistant_last_prefix",
        _dev("prefix_truncation", "fixed", (("ASSISTANT: H", "ASSISTANT: Hi"),)),
    ),
    **_rows("wizardlm", "tools_conversation", _dev("no_tools", "raises")),
    **_rows("yi", "tools_conversation", _dev("no_tools", "raises")),
}


# --------------------------------------------------------------------------- calls
@dataclass(frozen=True)
class Call:
    """One LMDeploy call, expressed as a chatfmt render."""

    template: str
    messages: Any
    tools: list[dict[str, Any]] | None = None
    sequence_start: bool = True
    continue_final: bool = False
    completion: bool = False
    adapted: tuple[str, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Case:
    """A recorded LMDeploy output and the chatfmt call that reproduces it."""

    case_id: str
    lmdeploy_template: str | None
    expected: str
    call: Call | None  # None: out of scope


@cache
def _data() -> dict[str, Any]:
    return json.loads(CASES_FILE.read_text(encoding="utf-8"))


def _wrap(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """LMDeploy passes bare function objects; the OpenAI form wraps them."""
    if tools is None:
        return None
    return [t if "function" in t else {"type": "function", "function": t} for t in tools]


def _stringify(messages: Any) -> tuple[Any, tuple[str, ...]]:
    """Dict content (LMDeploy's tests pass tool results as dicts) -> its Python text, which is
    what LMDeploy's f-strings and the Jinja templates print."""
    if not isinstance(messages, list):
        return messages, ()
    out, notes = [], []
    for i, m in enumerate(messages):
        if isinstance(m.get("content"), dict):
            m = {**m, "content": str(m["content"])}
            notes.append(f"messages[{i}].content given as a dict: passed as its Python text")
        out.append(m)
    return out, tuple(notes)


def _lmdeploy_call(case: dict[str, Any]) -> Call:
    lm = case["template"]
    init = case.get("init_kwargs") or {}
    completion = init.get("capability") == "completion" or TEMPLATE_MAP[lm] == COMPLETION
    if case["method"] == "get_prompt":
        messages: Any = [{"role": "user", "content": case["prompt"]}]
        start = case.get("sequence_start", True)
    else:
        messages = copy.deepcopy(case.get("messages", case.get("prompt")))
        start = True
    if "meta_instruction" in init and not completion and start:
        messages = [{"role": "system", "content": init["meta_instruction"]}, *messages]
    messages, notes = _stringify(messages)
    last_assistant = isinstance(messages, list) and messages[-1]["role"] == "assistant"
    return Call(
        template=TEMPLATE_MAP[lm],
        messages=messages,
        tools=_wrap(case.get("tools")),
        sequence_start=start,
        continue_final=last_assistant and lm not in GENERATION_PROMPT_AFTER_ASSISTANT,
        completion=completion,
        adapted=notes,
    )


def _case_list(section: str, prefix: str) -> Iterator[Case]:
    seen: Counter[str] = Counter()
    for case in _data()[section]:
        case_id = f"{prefix}:{case['test']}/{seen[case['test']]}"
        seen[case["test"]] += 1
        lm = case["template"]
        in_scope = lm in TEMPLATE_MAP and case_id not in OUT_OF_SCOPE_CASES
        yield Case(case_id, lm, case["expected_prompt"], _lmdeploy_call(case) if in_scope else None)


def _matrix_call(lm: str, key: str) -> Call:
    inputs = _data()["registry_matrix_inputs"]
    name = TEMPLATE_MAP[lm]
    completion = name == COMPLETION
    hello = [{"role": "user", "content": inputs["get_prompt"]}]
    if key == "get_prompt_first_turn":
        return Call(name, hello, completion=completion)
    if key == "get_prompt_later_turn":
        return Call(name, hello, sequence_start=False, completion=completion)
    if key == "tools_conversation":
        conv = inputs[key]
        opts = tuple(TOOLS_OPTIONS.get(name, {}).items())
        msgs = copy.deepcopy(conv["messages"])
        return Call(name, msgs, _wrap(conv["tools"]), completion=completion, options=opts)
    cont = key == "assistant_last_prefix" and lm not in GENERATION_PROMPT_AFTER_ASSISTANT
    return Call(name, copy.deepcopy(inputs[key]), continue_final=cont, completion=completion)


def _matrix_cases() -> Iterator[Case]:
    for row in _data()["registry_matrix"]:
        lm = row["template"]
        for key, expected in row["renders"].items():
            call = _matrix_call(lm, key) if lm in TEMPLATE_MAP else None
            yield Case(f"matrix:{lm}/{key}", lm, expected, call)


@cache
def all_cases() -> tuple[Case, ...]:
    """Every recorded LMDeploy output, in file order."""
    return (
        *_case_list("expected_output_cases", "expected"),
        *_case_list("other_recorded_outputs", "other"),
        *_matrix_cases(),
    )


# --------------------------------------------------------------------------- rendering
def _template(call: Call) -> Template:
    tpl = chatfmt.get_template(call.template)
    if call.completion and tpl.generation_config.capability != "completion":
        tpl = copy.copy(tpl)  # LMDeploy's capability='completion' on a chat template
        tpl.generation_config = tpl.generation_config.replace(capability="completion")
    return tpl


def chatfmt_render(call: Call) -> str:
    """chatfmt's output for an LMDeploy call."""
    return _template(call).render(
        copy.deepcopy(call.messages),
        tools=call.tools,
        sequence_start=call.sequence_start,
        continue_final_message=call.continue_final,
        now=NOW,
        **CALL_OPTIONS.get(call.template, {}),
        **dict(call.options),
    )


_CHATGLM3_TOOLS_PROMPT = (
    "Answer the following questions as best as you can. You have access to the following tools:\n"
)


def _chatglm3_message_form(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], None]:
    """The messages ChatGLM3's own demo builds for its template: a tools system turn,
    calls as ``metadata`` + ```python tool_call(...)```, results as ``observation``."""
    functions = [t["function"] for t in tools or ()]
    out: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": _CHATGLM3_TOOLS_PROMPT + json.dumps(functions, ensure_ascii=False, indent=4),
        }
    ]
    for m in validate_conversation(messages, tools).messages:
        if m.role == "assistant" and m.tool_calls:
            for c in m.tool_calls:
                args = ", ".join(f"{k}={python_literal(v)}" for k, v in c.arguments.items())
                code = f"```python\ntool_call({args})\n```"
                out.append({"role": "assistant", "metadata": c.name, "content": code})
        elif m.role == "tool":
            out.append({"role": "observation", "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out, None


def _glm4_message_form(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], None]:
    return _glm4_official_messages({"messages": messages, "tools": tools}), None


#: Templates whose official Jinja takes tools in the message form the model's own code
#: builds (not OpenAI's ``tools=``): chatfmt template -> converter.
OFFICIAL_TOOL_FORMS: dict[str, Callable[..., tuple[list[dict[str, Any]], Any]]] = {
    "chatglm3": _chatglm3_message_form,
    "glm4": _glm4_message_form,
}


def _official(call: Call, messages: list[dict[str, Any]], **kw: Any) -> str:
    file, variables = OFFICIAL[call.template]
    source = (DATA / file).read_text(encoding="utf-8")
    tools = call.tools
    if tools and call.template in OFFICIAL_TOOL_FORMS:
        messages, tools = OFFICIAL_TOOL_FORMS[call.template](messages, tools)
    defaults = chatfmt.get_template(call.template).default_options
    thinking = {k: v for k, v in defaults.items() if k == "enable_thinking"}
    return official_render(
        source,
        messages,
        tools=tools,
        **{**thinking, **variables, **CALL_OPTIONS.get(call.template, {}), **kw},
    )


_PROBE = [
    {"role": "user", "content": "probe question"},
    {"role": "assistant", "content": "probe answer"},
]


def official_output(call: Call) -> str:
    """The official template's render of the same call (raises what the template raises).

    For ``sequence_start=False`` it is the part of the official render of
    [probe question, probe answer, *messages] that follows the stop token ending the probe
    answer (what an engine holding the earlier turn appends).
    """
    messages = copy.deepcopy(call.messages)
    if call.sequence_start:
        return _official(
            call,
            messages,
            add_generation_prompt=not call.continue_final,
            continue_final_message=call.continue_final,
        )
    full = _official(call, [*_PROBE, *messages], add_generation_prompt=True)
    after = full.index("probe answer") + len("probe answer")
    stops = _template(call).generation_config.stop_words
    ends = [
        full.index(s, after) + len(s)
        for s in stops
        if s in full[after:] and not full[after : full.index(s, after)].strip()
    ]
    assert ends, f"no stop word after the probe reply in {full!r}"
    return full[min(ends) :]


# --------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class Verdict:
    case: Case
    kind: str  # "identical" | "deviation" | "out of scope"
    reason: str = ""


def check(case: Case) -> Verdict:
    """Check one case against LMDeploy (or, for a deviation, its own oracle)."""
    if case.call is None:
        lm = case.lmdeploy_template
        reason = OUT_OF_SCOPE_CASES.get(case.case_id) or OUT_OF_SCOPE[str(lm)]
        return Verdict(case, "out of scope", reason)
    call = case.call
    dev = LMDEPLOY_DEVIATIONS.get(case.case_id)
    try:
        ours: str | None = chatfmt_render(call)
        error: ChatFmtError | None = None
    except ChatFmtError as exc:
        ours, error = None, exc
    where = f"{case.case_id} ({call.template})"
    if dev is None:
        assert error is None, f"{where}: chatfmt raised {error!r}"
        assert ours == case.expected, f"{where}:\n chatfmt {ours!r}\n lmdeploy {case.expected!r}"
        return Verdict(case, "identical")
    assert ours != case.expected, f"{where}: listed as a deviation but chatfmt matches LMDeploy"
    if dev.check == "raises":
        assert isinstance(error, ValidationError), (
            f"{where}: expected a ValidationError, got {ours!r}"
        )
        assert error.index is not None or error.field, f"{where}: the error names nothing: {error}"
    elif dev.check == "official":
        try:
            official: str | None = official_output(call)
        except Exception:  # the official template rejects the conversation
            official = None
        if official is None:
            assert error is not None, f"{where}: the official template raises, chatfmt rendered"
        else:
            assert error is None, f"{where}: chatfmt raised {error!r}; official {official!r}"
            for old, new in dev.fixes:
                assert old in official, f"{where}: fix {old!r} does not apply"
                official = official.replace(old, new)
            assert ours == official, f"{where}:\n chatfmt  {ours!r}\n official {official!r}"
    elif dev.check == "fixed":
        assert error is None, f"{where}: chatfmt raised {error!r}"
        fixed = case.expected
        for old, new in dev.fixes:
            assert old in fixed, f"{where}: fix {old!r} does not apply"
            fixed = fixed.replace(old, new)
        assert ours == fixed, f"{where}:\n chatfmt {ours!r}\n fixed   {fixed!r}"
    elif dev.check == "completion":
        assert error is None, f"{where}: chatfmt raised {error!r}"
        texts = [m.get("content") or "" for m in call.messages]
        assert ours == "".join(texts), f"{where}: {ours!r}"
    else:  # pragma: no cover - a typo in LMDEPLOY_DEVIATIONS
        raise AssertionError(f"unknown check {dev.check!r}")
    return Verdict(case, "deviation", dev.reason)


# --------------------------------------------------------------------------- tests
def _ids(cases: tuple[Case, ...]) -> list[str]:
    return [c.case_id for c in cases]


def _case_ids() -> list[str]:
    return _ids(all_cases()) if CASES_FILE.is_file() else []


@cache
def verdicts() -> dict[str, str]:
    """case id -> verdict kind, for every case (raises on the first failing case)."""
    return {c.case_id: check(c).kind for c in all_cases()}


@pytest.mark.usefixtures("shared_dir")
@pytest.mark.parametrize("case_id", _case_ids())
def test_lmdeploy_case(case_id: str) -> None:
    """Each recorded output: identical, a checked deviation, or out of scope."""
    case = next(c for c in all_cases() if c.case_id == case_id)
    verdict = check(case)
    if case.call is None:
        assert verdict.kind == "out of scope" and verdict.reason
    else:
        assert verdict.kind == ("deviation" if case_id in LMDEPLOY_DEVIATIONS else "identical")


@pytest.mark.usefixtures("shared_dir")
def test_counts_and_docs() -> None:
    """docs/lmdeploy.md lists every case with the verdict this test computes."""
    kinds = verdicts()
    assert Counter(kinds.values()) == {"identical": 91, "deviation": 122, "out of scope": 210}
    doc = (ROOT / "docs" / "lmdeploy.md").read_text(encoding="utf-8")
    row = re.compile(
        r"^\| `((?:expected|other|matrix):[^`]+)` \| `[^`]*` \| [^|]* \| "
        r"(identical|deviation|out of scope)",
        re.M,
    )
    assert dict(row.findall(doc)) == kinds


@pytest.mark.usefixtures("shared_dir")
def test_every_deviation_and_adaptation_is_used() -> None:
    ids = set(_ids(all_cases()))
    stale = set(LMDEPLOY_DEVIATIONS) - ids
    assert not stale, f"deviations for unknown cases: {sorted(stale)}"
    for case_id in LMDEPLOY_DEVIATIONS:
        case = next(c for c in all_cases() if c.case_id == case_id)
        assert case.call is not None, f"{case_id} is out of scope, not a deviation"
    assert set(OUT_OF_SCOPE_CASES) <= ids
    # every registered LMDeploy template is either mapped or out of scope, never both
    registered = set(_data()["registered_templates"])
    assert registered == set(TEMPLATE_MAP) | set(OUT_OF_SCOPE)
    assert not set(TEMPLATE_MAP) & set(OUT_OF_SCOPE)


@pytest.mark.usefixtures("shared_dir")
def test_dict_content_is_rejected_then_adapted() -> None:
    """LMDeploy's Qwen2.5 tests pass tool results as dicts; chatfmt wants text."""
    adapted = [c for c in all_cases() if c.call is not None and c.call.adapted]
    assert len(adapted) == 2
    raw = next(
        c
        for c in _data()["expected_output_cases"]
        if any(isinstance(m.get("content"), dict) for m in c.get("messages", []))
    )
    with pytest.raises(ValidationError) as err:
        chatfmt.render(raw["messages"], "qwen2.5", tools=_wrap(raw["tools"]))
    assert err.value.field == "content" and err.value.index is not None


@pytest.mark.usefixtures("shared_dir")
@pytest.mark.parametrize("lm", sorted(OUT_OF_SCOPE))
def test_out_of_scope_templates_are_absent(lm: str) -> None:
    if lm in OUT_OF_SCOPE_RESOLVES:
        assert chatfmt.get_template(lm).name == OUT_OF_SCOPE_RESOLVES[lm]
    else:
        with pytest.raises(TemplateNotFoundError):
            chatfmt.get_template(lm)


#: LMDeploy names chatfmt does not accept as a template name (the mapping above applies).
NOT_ALIASED = {"base", "llama", "deepseek-r1", "wizardlm"}


def test_mapped_templates_and_officials_exist() -> None:
    for lm, name in TEMPLATE_MAP.items():
        assert chatfmt.get_template(name).name == name, lm
        if lm in NOT_ALIASED:
            with pytest.raises(TemplateNotFoundError):
                chatfmt.get_template(lm)
        else:
            assert chatfmt.get_template(lm).name == name, lm
    for name, (file, _vars) in OFFICIAL.items():
        tpl = chatfmt.get_template(name)
        assert file in tpl.official_templates or file in tpl.source, name
        assert (DATA / file).is_file()
    assert chatfmt.get_template(COMPLETION).generation_config.capability == "completion"


# --------------------------------------------------------------------------- match cases
#: LMDeploy's best_match_model answers chatfmt resolves differently, and why.
MATCH_DIFFERENCES: dict[str, str] = {
    "base": "chatfmt has no silent fallback: a name no template matches raises "
    "TemplateNotFoundError (use a completion template such as internlm-7b explicitly)",
}
#: LMDeploy answers whose text format is a chatfmt template of another name.
MATCH_TEXT_FORMAT: dict[str, str] = {
    # Qwen2.5-VL's own template (the qwen2.5vl GGUF Jinja) is plain ChatML with
    # 'You are a helpful assistant.' for text-only chats: chatfmt's `qwen`.
    "qwen2d5-vl": "qwen",
}


def _match_ids() -> list[str]:
    return [c["model_path"] for c in _data()["match_cases"]] if CASES_FILE.is_file() else []


@pytest.mark.usefixtures("shared_dir")
@pytest.mark.parametrize("model_path", _match_ids())
def test_match_cases(model_path: str) -> None:
    answer = next(
        c["template_name"] for c in _data()["match_cases"] if c["model_path"] == model_path
    )
    if answer in MATCH_TEXT_FORMAT:
        assert chatfmt.get_template(model_path).name == MATCH_TEXT_FORMAT[answer]
        return
    if answer in OUT_OF_SCOPE or answer in MATCH_DIFFERENCES:
        with pytest.raises(TemplateNotFoundError):
            chatfmt.get_template(model_path)
        return
    assert chatfmt.get_template(model_path).name == TEMPLATE_MAP[answer]


def _qwen25_vl_official() -> str:
    data = json.loads(
        (SHARED / "reference" / "ollama_gguf_chat_templates.json").read_text(encoding="utf-8")
    )
    return next(e["gguf"] for e in data["entries"] if e["model"] == "library/qwen2.5vl:latest")


@pytest.mark.usefixtures("shared_dir")
def test_qwen25_vl_resolves_to_its_text_format() -> None:
    msgs = [{"role": "user", "content": "What's the temperature in San Francisco now?"}]
    official = official_render(_qwen25_vl_official(), msgs)
    assert chatfmt.render(msgs, "qwen") == official  # the format itself exists in chatfmt
    assert chatfmt.render(msgs, "Qwen/Qwen2.5-VL-7B-Instruct") == official
