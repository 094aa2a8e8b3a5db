"""Conformance with LMDeploy's own chat-template cases (``lmdeploy_template_cases.json``).

Every recorded LMDeploy call is reproduced with chatfmt (``get_prompt(prompt, sequence_start)``
is one user message; ``messages2prompt`` renders the messages with LMDeploy's implicit
generation prompt; ``meta_instruction`` becomes a system message; ``capability='completion'``
returns the prompt unchanged). Each case has exactly one verdict:

- identical: chatfmt's output equals LMDeploy's;
- deviation (``LMDEPLOY_DEVIATIONS``): chatfmt's output equals the model's official template
  (:data:`OFFICIAL`, read from ../shared, rendered by transformers' own Jinja renderer), or,
  where no official template covers the case, LMDeploy's output with fixes from a stated
  source, or chatfmt refuses the input with the error named for the reason; each reason
  (:data:`R`) has its :data:`EVIDENCE`, a check that the two outputs differ for that reason;
- out of scope (``OUT_OF_SCOPE``): chatfmt has no such template (vision-language models,
  formats without a public text template); checked per LMDeploy template name.

docs/lmdeploy.md lists every case with its verdict, check and reasons; its counts are
compared with the ones computed here.
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
from _official import glm4_server_messages
from chatfmt.errors import (
    ChatFmtError,
    TemplateNotFoundError,
    UnsupportedFeatureError,
    ValidationError,
)
from chatfmt.families.glm.templates import python_literal
from chatfmt.families.internlm.templates import INTERNLM_META_INSTRUCTION
from chatfmt.protocol import validate_conversation
from chatfmt.template import Template

from _support import ROOT, SHARED, official_render, official_source, require_shared

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
    "gpt-oss": "LMDeploy's GptOss class is a simplified fallback (no channels: "
    "'<|start|>assistantHi there<|end|>'), not the model's Harmony format; chatfmt's gpt-oss "
    "template is the official one (tests/render/test_gpt_oss.py), so these renders are not compared",
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
    "llama4": "no LMDeploy case records Llama 4's output; the name resolves to chatfmt's "
    "text-only llama4 template (Llama 4 is natively multimodal: image placeholders are not rendered)",
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
    "gpt-oss": "gpt-oss",  # the name resolves to chatfmt's official Harmony template
    "llama4": "llama4",
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
#: (the seed's default layout is indented; see tests/render/test_internlm.py).
#: For ChatGLM3, the layout its own demo code writes (json.dumps(tools, indent=4)).
TOOLS_OPTIONS: dict[str, dict[str, Any]] = {
    "internlm2": {"tools_json": "compact", "plugin_prompt": "{prompt}"},
    "internlm3": {"tools_json": "compact", "plugin_prompt": "{prompt}"},
    "chatglm3": {"tools_json": "indent4"},
}

_DS = {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
_L2 = {"bos_token": "<s>", "eos_token": "</s>"}
_L3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "date_string": "26 Jul 2024"}


@dataclass(frozen=True)
class Official:
    """A model's official Jinja chat template, read from ../shared (not from chatfmt's copy).

    ``where``: ``templates/<file>`` (../shared/reference/templates), ``tokenizer/<folder>``
    (the ``chat_template`` of a tokenizer_config.json in ../shared/tokenizers),
    ``llama.cpp/<case name>`` (a template of llama.cpp's test-chat-template cases) or
    ``ollama/<model>`` (the Hugging Face template embedded in an Ollama GGUF).
    ``data_file``: chatfmt's shipped copy, which must be the same text.
    ``variables``: the special tokens the model's tokenizer config passes to the template.
    """

    where: str
    data_file: str
    variables: dict[str, Any]

    def source(self) -> str:
        return _shared_template(self.where)


@cache
def _shared_template(where: str) -> str:
    kind, _, key = where.partition("/")
    if kind == "templates":
        return official_source(key)
    reference = require_shared() / "reference"
    if kind == "tokenizer":
        config = require_shared() / "tokenizers" / key / "tokenizer_config.json"
        return str(json.loads(config.read_text(encoding="utf-8"))["chat_template"])
    if kind == "llama.cpp":
        data = json.loads((reference / "llamacpp_chat_template_cases.json").read_text("utf-8"))
        return str(next(c["template_source"] for c in data["cases"] if c["name"] == key))
    if kind == "ollama":
        data = json.loads((reference / "ollama_gguf_chat_templates.json").read_text("utf-8"))
        return str(next(e["gguf"] for e in data["entries"] if e["model"] == key))
    raise AssertionError(f"unknown official template location {where!r}")


#: chatfmt template -> the model's official template (the oracle for deviations).
OFFICIAL: dict[str, Official] = {
    "chatglm3": Official("templates/THUDM-chatglm3-6b.jinja", "THUDM-chatglm3-6b.jinja", {}),
    "glm4": Official("templates/THUDM-glm-4-9b-chat.jinja", "THUDM-glm-4-9b-chat.jinja", {}),
    "deepseek-v2": Official("llama.cpp/DeepSeek-V2", "deepseek-ai-DeepSeek-V2-Chat.jinja", _DS),
    "deepseek-coder": Official(
        "llama.cpp/deepseek-ai/deepseek-coder-33b-instruct",
        "deepseek-ai-deepseek-coder-33b-instruct.jinja",
        {**_DS, "eos_token": "<|EOT|>"},
    ),
    "deepseek-r1-distill-qwen": Official(
        "templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        _DS,
    ),
    "deepseek-v3": Official("tokenizer/deepseek_v3", "deepseek-ai-DeepSeek-V3.jinja", _DS),
    "gemma2": Official(
        "templates/google-gemma-2-2b-it.jinja",
        "google-gemma-2-2b-it.jinja",
        {"bos_token": "<bos>", "eos_token": "<eos>"},
    ),
    "internlm2": Official(
        "templates/internlm-internlm2-chat-7b.jinja", "internlm-internlm2-chat-7b.jinja", _L2
    ),
    "llama2": Official("ollama/library/llama2:7b", "meta-llama-Llama-2-7b-chat-hf.jinja", _L2),
    # the Llama 3.1 tokenizer config carries the short Llama 3 template (../shared/tokenizers)
    "llama3": Official("tokenizer/llama3_1", "meta-llama-Meta-Llama-3-8B-Instruct.jinja", _L3),
    "llama3.1": Official(
        "templates/meta-llama-Llama-3.1-8B-Instruct.jinja",
        "meta-llama-Llama-3.1-8B-Instruct.jinja",
        _L3,
    ),
    "llama3.2": Official(
        "templates/meta-llama-Llama-3.2-3B-Instruct.jinja",
        "meta-llama-Llama-3.2-3B-Instruct.jinja",
        _L3,
    ),
    "mistral-v1": Official(
        "llama.cpp/mistralai/Mistral-7B-Instruct-v0.2 (mistralai 'v1' template with a system prompt)",
        "mistralai-Mistral-7B-Instruct-v0.2.jinja",
        _L2,
    ),
    "phi3": Official(
        "ollama/library/phi3:3.8b",
        "ollama-phi3-3.8b.jinja",
        {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
    ),
    "phi4": Official(
        "llama.cpp/phi-4",
        "llamacpp-phi-4.jinja",
        {"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>"},
    ),
    "qwen": Official("ollama/library/qwen2:0.5b", "ollama-qwen2-0.5b.jinja", {}),
    "qwen2.5": Official(
        "templates/Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja", {}
    ),
    "qwen3": Official("templates/Qwen-Qwen3-0.6B.jinja", "Qwen-Qwen3-0.6B.jinja", {}),
    "qwq": Official("templates/Qwen-QwQ-32B.jinja", "Qwen-QwQ-32B.jinja", {}),
}

#: Where the correct output comes from for the deviations checked as ``fixed`` (formats with
#: no official Jinja template, or parts of a format the official template does not cover).
SEED_INTERNLM2 = (
    "InternLM2's chat_format.md (../shared/seeds/000_*.txt): plugin results are written as "
    "'<|im_start|>environment name=<|plugin|>\\n'"
)
FASTCHAT_VICUNA = (
    "FastChat's vicuna_v1.1 conversation template (Vicuna ships no Jinja template), which "
    "LMDeploy's Vicuna class otherwise reproduces byte for byte"
)
SEED_INTERNLM = (
    "LMDeploy's chat-template design doc (../shared/seeds/002_*.txt, InternLMChat7B: "
    "'<|System|>:' marker)"
)
INTERNLM3_FORMAT = (
    "InternLM3 ships no Jinja template in ../shared; it uses the InternLM2 chat format, whose "
    "official template adds no default system turn"
)


# --------------------------------------------------------------------------- deviations
@dataclass(frozen=True)
class Deviation:
    """A known LMDeploy deviation: why LMDeploy differs, and what chatfmt renders instead.

    ``check`` names the oracle for chatfmt's output:

    - ``"official"``: the model's official template (:data:`OFFICIAL`) rendered by
      transformers' renderer, with ``fixes`` (old, new) for what that Jinja cannot express;
      where the official template raises, chatfmt raises too;
    - ``"fixed"``: no official template covers it: LMDeploy's output with ``fixes`` applied,
      each fix taken from ``source``;
    - ``"raises"``: chatfmt refuses the input with :data:`REFUSALS`' error for the reason,
      naming the message or field, instead of silently losing part of it.
    """

    keys: tuple[str, ...]  # the reasons (keys of :data:`R`)
    check: str = "official"
    fixes: tuple[tuple[str, str], ...] = ()
    source: str = ""

    @property
    def reason(self) -> str:
        return " ".join(R[k] for k in self.keys)


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
    "unanswered_results": "LMDeploy renders tool/environment messages that answer no tool call; "
    "chatfmt requires a tool result to follow an assistant tool call (ValidationError naming "
    "the message). The structured form of this case is checked in tests/render/test_internlm.py.",
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
    "writes the tool result as bare text, the official template drops the call (and writes, "
    "drops or rejects the tool result); chatfmt raises UnsupportedFeatureError instead of losing it.",
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


#: For the reasons of ``"raises"`` deviations: the error chatfmt raises instead.
REFUSALS: dict[str, type[ChatFmtError]] = {
    "unanswered_results": ValidationError,
    "no_tools": UnsupportedFeatureError,
    "no_tools_official": UnsupportedFeatureError,
    "base_lists": UnsupportedFeatureError,
}


def _dev(keys: str, *fixes: tuple[str, str]) -> Deviation:
    """chatfmt == the official template (``fixes`` applied); reasons ``keys`` ('a+b') of R."""
    return Deviation(tuple(keys.split("+")), "official", fixes)


def _fixed(keys: str, source: str, *fixes: tuple[str, str]) -> Deviation:
    """chatfmt == LMDeploy's output with ``fixes`` (taken from ``source``) applied."""
    return Deviation(tuple(keys.split("+")), "fixed", fixes, source)


def _raises(keys: str) -> Deviation:
    """chatfmt refuses the input (the error of :data:`REFUSALS` for the reason)."""
    return Deviation(tuple(keys.split("+")), "raises")


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
    "expected:test_messages2prompt4internlm2_chat/0": _raises("unanswered_results"),
    "expected:test_messages2prompt4internlm2_chat/1": _raises("unanswered_results"),
    "expected:test_internlm_tool_call/0": _fixed(
        "internlm_environment_name", SEED_INTERNLM2, _ENV_NAME
    ),
    "expected:test_llama3_1/0": _dev("llama3_tools"),
    "expected:test_qwen2d5/6": _dev("qwen_empty_content"),
    "expected:test_qwen2d5/8": _raises("unanswered_results"),
    # ---------------------------------------------------------------- other_recorded_outputs
    "other:test_model_config[[fake meta_instruction]-llama2]/0": _dev("bos+space_after_inst"),
    "other:test_vicuna/0": _fixed("system_prefix_override", FASTCHAT_VICUNA, (_SYS, "")),
    "other:test_vicuna/2": _fixed("voice", FASTCHAT_VICUNA, ("ASSISTANT: ", "ASSISTANT:")),
    "other:test_prefix_response/0": _dev("internlm_default_system"),
    "other:test_internlm_chat/0": _fixed(
        "system_prefix_override", SEED_INTERNLM, (_SYS, "<|System|>:")
    ),
    "other:test_llama2/0": _dev("bos+space_after_inst"),
    "other:test_llama2/1": _dev("space_after_inst"),
    "other:test_llama2/2": _dev("llama2_default_system+bos+space_after_inst"),
    # ---------------------------------------------------------------- registry_matrix
    **_rows(
        "base",
        _CONV + " assistant_last_prefix tools_conversation",
        _raises("base_lists"),
    ),
    **_rows(
        "llama",
        _CONV + " assistant_last_prefix tools_conversation",
        _raises("base_lists"),
    ),
    **_rows("baichuan2", "tools_conversation", _raises("no_tools")),
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
            ("<|assistant|>\n ```python", "<|assistant|>get_weather\n ```python"),
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
    **_rows("deepseek", "tools_conversation", _raises("no_tools_official")),
    **_rows(
        "deepseek-coder", _CONV + " assistant_last_prefix get_prompt_first_turn", _dev("coder_bos")
    ),
    **_rows("deepseek-coder", "tools_conversation", _raises("no_tools_official")),
    **_rows("deepseek-r1", _ALL_BUT_TOOLS, _dev("r1_think")),
    **_rows("deepseek-r1", "tools_conversation", _dev("ds_tools")),
    **_rows(
        "deepseek-v3",
        "tools_conversation",
        _dev(
            "ds_tools+ds_empty_content",
            (
                "<｜Assistant｜><｜end▁of▁sentence｜>",
                "<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
                'get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜>',
            ),
        ),
    ),
    **_rows("gemma", "llamacpp_conversation", _dev("gemma_system")),
    **_rows("gemma", "no_system_conversation", _dev("bos+strip")),
    **_rows("gemma", "assistant_last_prefix get_prompt_first_turn", _dev("bos")),
    **_rows("gemma", "get_prompt_later_turn", _dev("gemma_later_turn")),
    **_rows("gemma", "tools_conversation", _raises("no_tools_official")),
    **_rows("internlm", "tools_conversation", _raises("no_tools")),
    **_rows(
        "internlm2",
        "no_system_conversation assistant_last_prefix get_prompt_first_turn",
        _dev("internlm_default_system"),
    ),
    **_rows(
        "internlm2 internlm3",
        "tools_conversation",
        _fixed(
            "internlm_default_system+internlm_environment_name",
            f"{INTERNLM3_FORMAT}; {SEED_INTERNLM2}",
            _NO_META,
            _ENV_NAME,
        ),
    ),
    **_rows(
        "internlm3",
        "no_system_conversation assistant_last_prefix get_prompt_first_turn",
        _fixed("internlm_default_system", INTERNLM3_FORMAT, _NO_META),
    ),
    **_rows("llama2", "llamacpp_conversation", _dev("bos+space_after_inst+strip")),
    **_rows(
        "llama2", "no_system_conversation", _dev("llama2_default_system+bos+space_after_inst+strip")
    ),
    **_rows("llama2", "assistant_last_prefix", _dev("llama2_default_system+bos")),
    **_rows("llama2", "get_prompt_first_turn", _dev("llama2_default_system+bos+space_after_inst")),
    **_rows("llama2", "get_prompt_later_turn", _dev("space_after_inst")),
    **_rows("llama2", "tools_conversation", _raises("no_tools_official")),
    **_rows("llama3", _CONV, _dev("strip")),
    **_rows("llama3", "tools_conversation", _raises("no_tools_official")),
    **_rows("llama3_1 llama3_2", _CONV, _dev("llama3_date+strip")),
    **_rows(
        "llama3_1 llama3_2", "assistant_last_prefix get_prompt_first_turn", _dev("llama3_date")
    ),
    **_rows("llama3_1", "tools_conversation", _dev("llama3_tools")),
    **_rows("llama3_2", "tools_conversation", _dev("llama3_tools")),
    **_rows("mistral", _ALL_BUT_TOOLS, _dev("mistral_spaces")),
    **_rows("mistral", "tools_conversation", _raises("no_tools_official")),
    **_rows("mixtral", _ALL_BUT_TOOLS, _dev("mistral_spaces")),
    **_rows("mixtral", "tools_conversation", _raises("no_tools_official")),
    **_rows("phi-3", "get_prompt_later_turn", _dev("phi_later_turn")),
    **_rows("phi-3", "tools_conversation", _raises("no_tools_official")),
    **_rows("phi-4", _ALL_BUT_TOOLS, _dev("phi4_format")),
    **_rows("phi-4", "tools_conversation", _raises("no_tools_official")),
    **_rows("qwen", "tools_conversation", _raises("no_tools_official")),
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
        _fixed("prefix_truncation", FASTCHAT_VICUNA, ("ASSISTANT: H", "ASSISTANT: Hi")),
    ),
    **_rows("vicuna", "tools_conversation", _raises("no_tools")),
    **_rows(
        "wizardlm",
        "assistant_last_prefix",
        _fixed("prefix_truncation", FASTCHAT_VICUNA, ("ASSISTANT: H", "ASSISTANT: Hi")),
    ),
    **_rows("wizardlm", "tools_conversation", _raises("no_tools")),
    **_rows("yi", "tools_conversation", _raises("no_tools")),
}


# --------------------------------------------------------------------------- evidence
def _bos(call: Call) -> str:
    return str(OFFICIAL[call.template].variables["bos_token"])


def _results(call: Call) -> list[str]:
    """The content of every tool/environment message (tool results)."""
    return [str(m["content"]) for m in call.messages if m["role"] in ("tool", "environment")]


def _loses_calls(text: str, call: Call) -> bool:
    """No tool call's name is written after the user's turn: ``text`` lost the calls."""
    names = [c["function"]["name"] for m in call.messages for c in m.get("tool_calls") or ()]
    user = next(m["content"] for m in call.messages if m["role"] == "user")
    after = text[text.index(user) + len(user) :] if user in text else text
    return bool(names) and not any(name in after for name in names)


def _drops_calls(text: str, call: Call) -> bool:
    """``text`` loses the tool calls but writes every tool result (as bare text)."""
    return _loses_calls(text, call) and all(r in text for r in _results(call))


def _official_loses_calls(call: Call) -> bool:
    try:
        return _loses_calls(official_output(call), call)
    except Exception:  # or rejects the conversation
        return True


_NO_DATE = "You are a helpful assistant."  # LMDeploy's llama3_1/3_2 default system text
_META_LLAMA2 = "You are a helpful, respectful and honest assistant."
_SPACED = "   I am an assistant   "  # the matrix conversations' padded reply

#: reason -> what it says, checked on LMDeploy's output ``lm``, chatfmt's correct output ``ok``
#: (None when chatfmt refuses the input) and the call: the evidence that the reason is why
#: they differ.
EVIDENCE: dict[str, Callable[[str, str | None, Call], bool]] = {
    "bos": lambda lm, ok, call: not lm.startswith(_bos(call)) and ok.startswith(_bos(call)),
    "coder_bos": lambda lm, ok, call: not lm.startswith(_bos(call)) and ok.startswith(_bos(call)),
    "strip": lambda lm, ok, call: _SPACED in lm and _SPACED not in ok,
    "space_after_inst": lambda lm, ok, call: (
        (lm.endswith("[/INST] ") and ok.endswith("[/INST]"))
        or ("[/INST] Hi there</s>" in lm and "[/INST] Hi there </s>" in ok)
    ),
    "llama2_default_system": lambda lm, ok, call: _META_LLAMA2 in lm and _META_LLAMA2 not in ok,
    "llama3_date": lambda lm, ok, call: (
        (_NO_DATE in lm or "Cutting Knowledge Date" not in lm)
        and _NO_DATE not in ok
        and "Cutting Knowledge Date" in ok
    ),
    "llama3_tools": lambda lm, ok, call: (
        "<{start_tag}={function_name}>" in lm and "Given the following functions" in ok
    ),
    "mistral_spaces": lambda lm, ok, call: (
        (("<s>" not in lm and "[/INST]Hi" in lm) or lm.startswith("[INST]"))
        and ok.lstrip("<s>").startswith(" [INST]")
    ),
    "glm_generation_prompt": lambda lm, ok, call: (
        lm.endswith(("<|assistant|>\n", "<|assistant|>\n ")) and ok.endswith("<|assistant|>")
    ),
    "glm_later_turn": lambda lm, ok, call: lm.startswith("<|user|>") and ok.startswith("\n"),
    "glm_tools": lambda lm, ok, call: _drops_calls(lm, call) and not _loses_calls(ok, call),
    "gemma_system": lambda lm, ok, call: (
        ok is None and lm.startswith(call.messages[0]["content"] + "<start_of_turn>")
    ),
    "gemma_later_turn": lambda lm, ok, call: (
        lm.startswith("<start_of_turn>") and ok.startswith("\n<start_of_turn>")
    ),
    "phi_later_turn": lambda lm, ok, call: (
        lm.startswith("<|user|>") and ok.startswith("\n<|user|>")
    ),
    "phi4_format": lambda lm, ok, call: (
        "<|user|>\n" in lm and "<|im_sep|>" not in lm and "<|im_start|>user<|im_sep|>" in ok
    ),
    "internlm_default_system": lambda lm, ok, call: (
        INTERNLM_META_INSTRUCTION in lm and INTERNLM_META_INSTRUCTION not in ok
    ),
    "internlm_environment_name": lambda lm, ok, call: (
        _ENV_NAME[0] in lm and _ENV_NAME[1] in ok and _ENV_NAME[1] not in lm
    ),
    "unanswered_results": lambda lm, ok, call: (
        ok is None
        and not any(m.get("tool_calls") for m in call.messages)
        and bool(_results(call))
        and all(r in lm for r in _results(call))
    ),
    "deepseek_system": lambda lm, ok, call: (
        lm.startswith("\n\nUser:") and ok.startswith(_bos(call) + "User:")
    ),
    "prefix_truncation": lambda lm, ok, call: lm.endswith(": H") and ok.endswith(": Hi"),
    "r1_think": lambda lm, ok, call: (
        lm.endswith("Hi<think>\n") and ok.endswith("Hi")
        if call.continue_final
        else not lm.endswith("</think>") and ok.endswith("<｜Assistant｜><think>\n</think>")
    ),
    "ds_tools": lambda lm, ok, call: _drops_calls(lm, call) and not _loses_calls(ok, call),
    "ds_empty_content": lambda lm, ok, call: (
        any(m.get("tool_calls") and m.get("content") == "" for m in call.messages)
        and _official_loses_calls(call)
        and not _loses_calls(ok, call)
    ),
    "qwen3_system": lambda lm, ok, call: (
        "<|im_start|>system\n<|im_end|>" in lm and "<|im_start|>system" not in ok
    ),
    "qwen3_reasoning": lambda lm, ok, call: "<think>" not in lm and "<think>\n\n</think>\n\n" in ok,
    "qwq_think": lambda lm, ok, call: not lm.endswith("<think>\n") and ok.endswith("<think>\n"),
    "qwen3_tools_system": lambda lm, ok, call: (
        "<|im_start|>system\n\n\n# Tools" in lm and "<|im_start|>system\n# Tools" in ok
    ),
    "qwen_empty_content": lambda lm, ok, call: (
        "<|im_start|>assistant\n\n<tool_call>" in lm and "<|im_start|>assistant\n<tool_call>" in ok
    ),
    "no_tools": lambda lm, ok, call: ok is None and _drops_calls(lm, call),
    "no_tools_official": lambda lm, ok, call: (
        ok is None and _drops_calls(lm, call) and _official_loses_calls(call)
    ),
    "system_prefix_override": lambda lm, ok, call: lm.startswith(_SYS) and _SYS not in ok,
    "voice": lambda lm, ok, call: lm.endswith("ASSISTANT: ") and ok.endswith("ASSISTANT:"),
    "base_lists": lambda lm, ok, call: lm == "None" and ok is None,
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
    return glm4_server_messages({"messages": messages, "tools": tools}), None


#: Templates whose official Jinja takes tools in the message form the model's own code
#: builds (not OpenAI's ``tools=``): chatfmt template -> converter.
OFFICIAL_TOOL_FORMS: dict[str, Callable[..., tuple[list[dict[str, Any]], Any]]] = {
    "chatglm3": _chatglm3_message_form,
    "glm4": _glm4_message_form,
}


def _official(call: Call, messages: list[dict[str, Any]], **kw: Any) -> str:
    official = OFFICIAL[call.template]
    tools = call.tools
    if tools and call.template in OFFICIAL_TOOL_FORMS:
        messages, tools = OFFICIAL_TOOL_FORMS[call.template](messages, tools)
    defaults = chatfmt.get_template(call.template).default_options
    thinking = {k: v for k, v in defaults.items() if k == "enable_thinking"}
    return official_render(
        official.source(),
        messages,
        tools=tools,
        **{**thinking, **official.variables, **CALL_OPTIONS.get(call.template, {}), **kw},
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
def verdict(case: Case) -> str:
    """``identical`` (chatfmt == LMDeploy), ``deviation`` or ``out of scope``."""
    if case.call is None:
        return "out of scope"
    return "deviation" if case.case_id in LMDEPLOY_DEVIATIONS else "identical"


@cache
def cases_by_id() -> dict[str, Case]:
    return {c.case_id: c for c in all_cases()}


def _ids(kind: str) -> list[str]:
    """Ids of the cases with verdict ``kind`` (none without ../shared: the tests then skip)."""
    return [c.case_id for c in all_cases() if verdict(c) == kind] if CASES_FILE.is_file() else []


def _apply(text: str, fixes: tuple[tuple[str, str], ...], where: str) -> str:
    for old, new in fixes:
        assert old in text, f"{where}: fix {old!r} does not apply to {text!r}"
        text = text.replace(old, new)
    return text


def correct_output(case: Case) -> str | type[ChatFmtError]:
    """What chatfmt must produce for a deviation: the text, or the error class it raises."""
    dev, call = LMDEPLOY_DEVIATIONS[case.case_id], case.call
    assert call is not None
    if dev.check == "raises":
        (error,) = {REFUSALS[k] for k in dev.keys if k in REFUSALS}
        return error
    if dev.check == "fixed":
        return _apply(case.expected, dev.fixes, f"{case.case_id} ({dev.source})")
    assert dev.check == "official", dev.check
    try:
        official = official_output(call)
    except Exception:  # the official template rejects the conversation: so does chatfmt
        return ChatFmtError
    return _apply(official, dev.fixes, f"{case.case_id} (official template)")


def _chatfmt(call: Call) -> str | ChatFmtError:
    try:
        return chatfmt_render(call)
    except ChatFmtError as exc:
        return exc


# --------------------------------------------------------------------------- tests
@pytest.mark.usefixtures("shared_dir")
@pytest.mark.parametrize("case_id", _ids("identical"))
def test_identical_to_lmdeploy(case_id: str) -> None:
    case = cases_by_id()[case_id]
    assert case.call is not None
    assert chatfmt_render(case.call) == case.expected


@pytest.mark.usefixtures("shared_dir")
@pytest.mark.parametrize("case_id", _ids("deviation"))
def test_deviation_renders_the_correct_format(case_id: str) -> None:
    """chatfmt renders the official (or stated-source) output, which LMDeploy's is not."""
    case = cases_by_id()[case_id]
    dev = LMDEPLOY_DEVIATIONS[case_id]
    assert case.call is not None
    want = correct_output(case)
    got = _chatfmt(case.call)
    why = f"{case_id} deviates from LMDeploy because: {dev.reason}"
    if isinstance(want, str):
        assert got == want, why
        assert want != case.expected, f"{case_id}: LMDeploy's output is correct, not a deviation"
    else:
        assert isinstance(got, want), f"{why}\nexpected {want.__name__}, chatfmt gave {got!r}"
        assert getattr(got, "index", None) is not None or getattr(got, "field", None), got
    ok = want if isinstance(want, str) else None
    for key in dev.keys:
        shown = EVIDENCE[key](case.expected, ok, case.call)
        assert shown, f"{case_id}: the outputs do not show reason {key!r}: {R[key]}"


@pytest.mark.usefixtures("shared_dir")
def test_every_case_has_exactly_one_verdict() -> None:
    """Every recorded LMDeploy output is identical, a deviation or out of scope, never two."""
    data = _data()
    recorded = len(data["expected_output_cases"]) + len(data["other_recorded_outputs"])
    recorded += sum(len(row["renders"]) for row in data["registry_matrix"])
    ids = list(cases_by_id())
    assert len(ids) == len(all_cases()) == recorded  # one unique id per recorded output
    out_of_scope = {c.case_id for c in all_cases() if c.call is None}
    assert not set(LMDEPLOY_DEVIATIONS) - set(ids), "deviations listed for unknown cases"
    assert not set(LMDEPLOY_DEVIATIONS) & out_of_scope, (
        "a deviation is listed for a case out of scope"
    )
    assert set(OUT_OF_SCOPE_CASES) <= out_of_scope
    for case_id in OUT_OF_SCOPE_CASES:  # LMDeploy's generic class, not a named template
        assert cases_by_id()[case_id].lmdeploy_template is None
    kinds = {verdict(c) for c in all_cases()}
    assert kinds <= {"identical", "deviation", "out of scope"}
    # every registered LMDeploy template is either mapped or out of scope, never both
    registered = set(data["registered_templates"])
    assert registered == set(TEMPLATE_MAP) | set(OUT_OF_SCOPE)
    assert not set(TEMPLATE_MAP) & set(OUT_OF_SCOPE)


@pytest.mark.usefixtures("shared_dir")
def test_each_deviation_check_has_its_oracle() -> None:
    """``official`` deviations have an official template; ``fixed`` ones a stated source;
    ``raises`` ones exactly one refusal reason; every reason is used."""
    for case_id, dev in LMDEPLOY_DEVIATIONS.items():
        call = cases_by_id()[case_id].call
        assert call is not None
        if dev.check == "official":
            assert call.template in OFFICIAL, case_id
        elif dev.check == "fixed":
            assert dev.source and dev.fixes, case_id
        else:
            assert dev.check == "raises", case_id
            assert len({REFUSALS[k] for k in dev.keys if k in REFUSALS}) == 1, case_id
    used = {k for dev in LMDEPLOY_DEVIATIONS.values() for k in dev.keys}
    assert used == set(R), f"unused reasons: {sorted(set(R) - used)}"
    assert set(EVIDENCE) == set(R), "every reason has its evidence"


def _doc() -> str:
    return (ROOT / "docs" / "lmdeploy.md").read_text(encoding="utf-8")


def _doc_reasons(dev: Deviation) -> str:
    return ", ".join(f"[{k}](#{k})" for k in dev.keys)


@pytest.mark.usefixtures("shared_dir")
def test_docs_list_every_case_with_its_verdict() -> None:
    """docs/lmdeploy.md's case table: the verdict, the check and the reasons of every case."""
    row = re.compile(
        r"^\| `((?:expected|other|matrix):[^`]+)` \| `[^`]*` \| [^|]* \|([^|]+)\|([^|]*)\|$",
        re.M,
    )
    documented = {case_id: (v.strip(), r.strip()) for case_id, v, r in row.findall(_doc())}
    computed = {}
    for case in all_cases():
        kind, dev = verdict(case), LMDEPLOY_DEVIATIONS.get(case.case_id)
        if dev is not None:
            computed[case.case_id] = (f"deviation ({dev.check})", _doc_reasons(dev))
        else:
            computed[case.case_id] = (kind, "see Templates" if kind == "out of scope" else "")
    assert documented == computed


def _section(section: str) -> Iterator[Case]:
    prefix = {"expected_output_cases": "expected:", "other_recorded_outputs": "other:"}
    return (c for c in all_cases() if c.case_id.startswith(prefix.get(section, "matrix:")))


@pytest.mark.usefixtures("shared_dir")
def test_docs_counts_and_oracles_are_the_computed_ones() -> None:
    """docs/lmdeploy.md's counts (summary, per template, per reason) and oracles match the data."""
    doc = _doc()
    for section in ("expected_output_cases", "other_recorded_outputs", "registry_matrix"):
        counts = Counter(verdict(c) for c in _section(section))
        row = re.search(rf"^\| `{section}`[^|]*\| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", doc, re.M)
        assert row, section
        want = [
            counts["identical"],
            counts["deviation"],
            counts["out of scope"],
            sum(counts.values()),
        ]
        assert [int(n) for n in row.groups()] == want, section
    total = Counter(verdict(c) for c in all_cases())
    line = (
        f"| **all** | **{total['identical']}** | **{total['deviation']}** | "
        f"**{total['out of scope']}** | **{len(all_cases())}** |"
    )
    assert line in doc
    row = re.compile(r"^\| `([^`]+)` \| [^|]* \| ([^|]*) \| (\d+) \| (\d+) \| \|$", re.M)
    by_template = {lm: (oracle, [int(i), int(d)]) for lm, oracle, i, d in row.findall(doc)}
    assert set(by_template) == set(TEMPLATE_MAP)
    for lm, (oracle, counts) in by_template.items():
        kinds = Counter(verdict(c) for c in all_cases() if c.lmdeploy_template == lm)
        assert counts == [kinds["identical"], kinds["deviation"]], lm
        if TEMPLATE_MAP[lm] in OFFICIAL:
            assert f"official `{OFFICIAL[TEMPLATE_MAP[lm]].where}`" in oracle, lm
    per_reason = Counter(k for dev in LMDEPLOY_DEVIATIONS.values() for k in dev.keys)
    documented = dict(re.findall(r'^- <a id="(\w+)"></a>\*\*\w+\*\* \((\d+)\):', doc, re.M))
    assert {k: int(n) for k, n in documented.items()} == dict(per_reason)


@pytest.mark.usefixtures("shared_dir")
def test_dict_content_is_rejected_then_adapted() -> None:
    """LMDeploy's Qwen2.5 tests pass tool results as dicts; chatfmt wants text."""
    raw = [
        c
        for c in _data()["expected_output_cases"]
        if any(isinstance(m.get("content"), dict) for m in c.get("messages", []))
    ]
    adapted = [c for c in all_cases() if c.call is not None and c.call.adapted]
    assert raw and len(adapted) == len(raw)
    for case in raw:
        with pytest.raises(ValidationError) as err:
            chatfmt.render(case["messages"], "qwen2.5", tools=_wrap(case.get("tools")))
        assert err.value.field == "content" and err.value.index is not None


@pytest.mark.usefixtures("shared_dir")
@pytest.mark.parametrize("lm", sorted(OUT_OF_SCOPE))
def test_out_of_scope_templates_are_absent(lm: str) -> None:
    if lm in OUT_OF_SCOPE_RESOLVES:
        assert chatfmt.get_template(lm).name == OUT_OF_SCOPE_RESOLVES[lm]
    else:
        with pytest.raises(TemplateNotFoundError) as err:
            chatfmt.get_template(lm)
        assert err.value.query == lm


#: LMDeploy names chatfmt does not accept as a template name (the mapping above applies).
NOT_ALIASED = {"base", "llama", "deepseek-r1", "wizardlm"}


def test_mapped_templates_exist() -> None:
    for lm, name in TEMPLATE_MAP.items():
        assert chatfmt.get_template(name).name == name, lm
        if lm in NOT_ALIASED:
            with pytest.raises(TemplateNotFoundError) as err:
                chatfmt.get_template(lm)
            assert err.value.query == lm
        else:
            assert chatfmt.get_template(lm).name == name, lm
    assert chatfmt.get_template(COMPLETION).generation_config.capability == "completion"


@pytest.mark.usefixtures("shared_dir")
@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_chatfmt_ships_the_official_template(name: str) -> None:
    """The oracle is read from ../shared; chatfmt's copy of it is the same text."""
    official = OFFICIAL[name]
    tpl = chatfmt.get_template(name)
    assert official.data_file in tpl.official_templates or official.data_file in tpl.source
    assert (DATA / official.data_file).read_text(encoding="utf-8") == official.source()


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
        with pytest.raises(TemplateNotFoundError) as err:
            chatfmt.get_template(model_path)
        assert err.value.query == model_path
        return
    assert chatfmt.get_template(model_path).name == TEMPLATE_MAP[answer]


def _qwen25_vl_official() -> str:
    return _shared_template("ollama/library/qwen2.5vl:latest")


@pytest.mark.usefixtures("shared_dir")
def test_qwen25_vl_resolves_to_its_text_format() -> None:
    msgs = [{"role": "user", "content": "What's the temperature in San Francisco now?"}]
    official = official_render(_qwen25_vl_official(), msgs)
    assert chatfmt.render(msgs, "qwen") == official  # the format itself exists in chatfmt
    assert chatfmt.render(msgs, "Qwen/Qwen2.5-VL-7B-Instruct") == official
