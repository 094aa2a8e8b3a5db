"""Moonshot AI Kimi-K2 and Kimi-K3: official Jinja templates with their parsers.

Kimi-K2 writes tool calls as ``<|tool_calls_section_begin|>…`` sections (parser
``kimi_k2``), Kimi-K2-Thinking puts ``<think>…</think>`` before the answer; Kimi-K3
uses its tag format ``<|open|>TAG …<|sep|>…<|close|>TAG<|sep|>`` (parser ``kimi_k3``).
"""

from __future__ import annotations

from ..config import GenerationConfig
from ..jinja.packaged import PackagedTemplate
from ..template import Template

_IM_END = "<|im_end|>"
#: Kimi-K2-Instruct: temperature 0.6 (model card); 128K context (0905: 256K).
_K2 = GenerationConfig(stop_words=(_IM_END,), temperature=0.6, top_p=1.0, session_len=131072)

TEMPLATES: tuple[Template, ...] = (
    PackagedTemplate(
        "Kimi-K2-Instruct.jinja",
        name="kimi-k2",
        model_ids=("moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Base"),
        aliases=("kimi-k2-instruct",),
        tool_parser="kimi_k2",
        generation=_K2,
        description="Kimi-K2-Instruct (Moonshot AI): <|im_user|>/<|im_assistant|> turns, "
        "tool calls in <|tool_calls_section_begin|> sections",
    ),
    PackagedTemplate(
        "Kimi-K2-Instruct.jinja",
        name="kimi-k2-0905",
        model_ids=("moonshotai/Kimi-K2-Instruct-0905",),
        tool_parser="kimi_k2",
        generation=_K2.replace(session_len=262144),
        description="Kimi-K2-Instruct-0905 (256K context), same template as Kimi-K2-Instruct",
    ),
    PackagedTemplate(
        "moonshotai-Kimi-K2.jinja",
        name="kimi-k2-0711",
        tool_parser="kimi_k2",
        generation=_K2,
        description="the first Kimi-K2-Instruct template (July 2025; as in GGUF files of that "
        "time): the same format with a per-message call index",
    ),
    PackagedTemplate(
        "Kimi-K2-Thinking.jinja",
        name="kimi-k2-thinking",
        model_ids=("moonshotai/Kimi-K2-Thinking",),
        tool_parser="kimi_k2",
        reasoning_parser="kimi_k2",
        generation=GenerationConfig(
            stop_words=(_IM_END,), temperature=1.0, top_p=1.0, session_len=262144
        ),
        description="Kimi-K2-Thinking: <think>reasoning</think> before the answer and tool calls",
    ),
    PackagedTemplate(
        "Kimi-K3.jinja",
        name="kimi-k3",
        model_ids=("moonshotai/Kimi-K3",),
        tool_parser="kimi_k3",
        reasoning_parser="kimi_k3",
        generation=GenerationConfig(
            stop_words=("<|end_of_msg|>",), temperature=1.0, top_p=1.0, session_len=262144
        ),
        description="Kimi-K3: <|open|>TAG …<|sep|> / <|close|>TAG<|sep|> messages; thinking "
        "(on by default) in a think tag, calls with typed arguments in a tools tag",
    ),
)
