"""Moonshot AI Kimi-K2 and Kimi-K3, with their parsers.

Kimi-K2 writes tool calls as ``<|tool_calls_section_begin|>…`` sections (parser
``kimi_k2``), Kimi-K2-Thinking puts ``<think>…</think>`` before the answer; Kimi-K3
uses its tag format ``<|open|>TAG …<|sep|>…<|close|>TAG<|sep|>`` (parser ``kimi_k3``).
Kimi-K2-Instruct (and -0905) has a native template reproducing its official Jinja
byte for byte; the others are the official Jinja files (packaged).
"""

from __future__ import annotations

from ...config import GenerationConfig
from ...history_rules import HistoryRules, Shown
from ...jinja.packaged import PackagedTemplate
from ...protocol import Conversation
from ...segments import Segment
from ...template import RenderContext, Template
from ..chatml.markers import IM_END
from ..chatml.render import function_call, tojson
from .k3_parser import KimiK3Parser, KimiK3Think
from .markers import END_OF_MSG, IM_ASSISTANT, IM_MIDDLE, IM_SYSTEM, IM_USER
from .parser import (
    ARG_BEGIN,
    CALL_BEGIN,
    CALL_END,
    SECTION_BEGIN,
    SECTION_END,
    KimiK2Parser,
    KimiK2ThinkParser,
)

_IM_END = IM_END
_IM_SYSTEM, _IM_USER, _IM_ASSISTANT, _IM_MIDDLE = (
    IM_SYSTEM,
    IM_USER,
    IM_ASSISTANT,
    IM_MIDDLE,
)
_HEADS = {"user": _IM_USER, "assistant": _IM_ASSISTANT}
KIMI_DEFAULT_SYSTEM = "You are Kimi, an AI assistant created by Moonshot AI."
_DEFAULT_SYSTEM_TURN = f"{_IM_SYSTEM}system{_IM_MIDDLE}{KIMI_DEFAULT_SYSTEM}{_IM_END}\n"
#: Kimi-K2-Instruct: temperature 0.6 (model card); 128K context (0905: 256K).
_K2 = GenerationConfig(stop_words=(_IM_END,), temperature=0.6, top_p=1.0, session_len=131072)


class KimiK2Template(Template):
    """Kimi-K2-Instruct: ``<|im_user|>NAME<|im_middle|>…<|im_end|>`` turns (NAME is the
    message's ``name`` or role), tools as JSON in a ``tool_declare`` system turn, calls as
    ``functions.NAME:N`` sections (N counts calls over the conversation), tool results as
    ``## Return of functions.NAME:N`` system turns matched to the calls in order."""

    name = "kimi-k2"
    aliases: tuple[str, ...] = ("kimi-k2-instruct",)
    model_ids: tuple[str, ...] = ("moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Base")
    description = (
        "Kimi-K2-Instruct (Moonshot AI): <|im_user|>/<|im_assistant|> turns, default system "
        "'You are Kimi…', tool calls in <|tool_calls_section_begin|> sections"
    )
    source = "official Jinja: Kimi-K2-Instruct.jinja"
    official_templates = ("Kimi-K2-Instruct.jinja",)
    control_tokens = (
        _IM_SYSTEM,
        _IM_USER,
        _IM_ASSISTANT,
        _IM_MIDDLE,
        _IM_END,
        SECTION_BEGIN,
        SECTION_END,
        CALL_BEGIN,
        ARG_BEGIN,
        CALL_END,
    )
    supports_tools = True
    tool_parser_class = KimiK2Parser
    generation_config = _K2

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        if conv.tools:
            b.control(f"{_IM_SYSTEM}tool_declare{_IM_MIDDLE}")
            b.content("[" + ", ".join(t.json for t in conv.tools) + "]")
            b.control(_IM_END)
        queue: list[str] = []  # ids of the calls whose results have not come yet
        counter = 0
        for pos, m in enumerate(conv.messages):
            role = m.source_role or m.role
            if pos == 0 and role != "system":
                b.control(_DEFAULT_SYSTEM_TURN)
            b.control(_HEADS.get(role, _IM_SYSTEM) + (m.name or role) + _IM_MIDDLE, m.index)
            reply = role == "assistant"
            if reply and m.tool_calls:
                if m.content:
                    b.content(m.content, m.index, True)
                b.control(SECTION_BEGIN, m.index, True)
                for j, call in enumerate(m.tool_calls):
                    call = function_call(self.name, m, call, j)
                    b.control(CALL_BEGIN + "functions.", m.index, True)
                    b.content(call.name, m.index, True)
                    b.control(f":{counter}{ARG_BEGIN}", m.index, True)
                    queue.append(f"functions.{call.name}:{counter}")
                    counter += 1
                    arguments = (
                        tojson(call.arguments, f"messages[{m.index}].tool_calls[{j}]")
                        if call.arguments_given_as_string
                        else call.arguments_json
                    )
                    b.content(arguments, m.index, True)
                    b.control(CALL_END, m.index, True)
                b.control(SECTION_END, m.index, True)
            elif role == "tool":
                call_id = queue.pop(0) if queue else f"functions.{m.name or 'unknown'}:{counter}"
                b.control(f"## Return of {call_id}\n", m.index)
                if m.content:
                    b.content(m.content, m.index)
            elif m.content is not None:
                b.content(m.content, m.index, reply)
            b.control(_IM_END, m.index, reply)
        if ctx.add_generation_prompt:
            b.control(f"{_IM_ASSISTANT}assistant{_IM_MIDDLE}")
        return b.segments


class KimiK20905Template(KimiK2Template):
    """Kimi-K2-Instruct-0905: the Kimi-K2-Instruct template, 256K context."""

    name = "kimi-k2-0905"
    aliases = ()
    model_ids = ("moonshotai/Kimi-K2-Instruct-0905",)
    description = "Kimi-K2-Instruct-0905 (256K context), same template as Kimi-K2-Instruct"
    generation_config = _K2.replace(session_len=262144)


TEMPLATES: tuple[Template, ...] = (
    KimiK2Template(),
    KimiK20905Template(),
    PackagedTemplate(
        "moonshotai-Kimi-K2.jinja",
        name="kimi-k2-0711",
        tool_parser=KimiK2Parser,
        generation=_K2,
        description="the first Kimi-K2-Instruct template (July 2025; as in GGUF files of that "
        "time): the same format with a per-message call index",
    ),
    PackagedTemplate(
        "Kimi-K2-Thinking.jinja",
        history=HistoryRules(reasoning=Shown.AFTER_LAST_ANSWER),
        name="kimi-k2-thinking",
        model_ids=("moonshotai/Kimi-K2-Thinking",),
        tool_parser=KimiK2Parser,
        reasoning_parser=KimiK2ThinkParser,
        generation=GenerationConfig(
            stop_words=(_IM_END,), temperature=1.0, top_p=1.0, session_len=262144
        ),
        description="Kimi-K2-Thinking: <think>reasoning</think> before the answer and tool calls",
    ),
    PackagedTemplate(
        "Kimi-K3.jinja",
        name="kimi-k3",
        model_ids=("moonshotai/Kimi-K3",),
        tool_parser=KimiK3Parser,
        reasoning_parser=KimiK3Think,
        generation=GenerationConfig(
            stop_words=(END_OF_MSG,), temperature=1.0, top_p=1.0, session_len=262144
        ),
        description="Kimi-K3: <|open|>TAG …<|sep|> / <|close|>TAG<|sep|> messages; thinking "
        "(on by default) in a think tag, calls with typed arguments in a tools tag",
    ),
)
