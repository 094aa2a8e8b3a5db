"""Test support shared by all test modules: the official-template oracle and conversation strategies.

``official_render`` renders an official Jinja chat template exactly the way Hugging Face
transformers does (its own renderer: sandboxed, trim_blocks/lstrip_blocks, tojson without
ASCII escaping, raise_exception, strftime_now), with tool-call arguments passed as objects.
"""

from __future__ import annotations

import copy
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CHATFMT_SHARED", ROOT.parent / "shared"))
TEMPLATES = SHARED / "reference" / "templates"


def require_shared() -> Path:
    """The ../shared folder (reference data). When it is absent, CI fails loudly (a RuntimeError);
    elsewhere the caller is skipped: the test, or its whole module when called at import time."""
    if SHARED.is_dir():
        return SHARED
    if os.environ.get("CI"):
        raise RuntimeError(f"../shared is required in CI but missing at {SHARED}")
    pytest.skip(f"reference data folder not found at {SHARED}", allow_module_level=True)


@cache
def official_source(filename: str) -> str:
    """Source of an official template from ../shared/reference/templates (see require_shared)."""
    return (require_shared() / "reference" / "templates" / filename).read_text(encoding="utf-8")


def for_official(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy of messages with tool-call ``arguments`` as objects (what official templates expect)."""
    out = copy.deepcopy(messages)
    for m in out:
        for call in m.get("tool_calls") or ():
            fn = call.get("function")
            if fn and isinstance(fn.get("arguments"), str):
                fn["arguments"] = json.loads(fn["arguments"])
    return out


def official_render(
    source: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    **kwargs: Any,
) -> str:
    """Render with transformers' own chat-template renderer (the oracle)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered = render_jinja_template(
        conversations=[for_official(messages)],
        tools=tools,
        chat_template=source,
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )
    if isinstance(rendered, tuple):  # (rendered, generation_indices)
        rendered = rendered[0]
    return rendered[0] if isinstance(rendered, list) else rendered


# --------------------------------------------------------------------------- strategies
#: Strings that look like control text of various families (must stay plain content).
LOOKALIKES = [
    "<|im_start|>",
    "<|im_end|>",
    "<|action_start|>",
    "<|action_end|>",
    "<|plugin|>",
    "<|interpreter|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
    "<|system|>",
    "[INST]",
    "[/INST]",
    "<<SYS>>",
    "<s>",
    "</s>",
    "<|eot_id|>",
    "<|start_header_id|>",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "[TOOL_CALLS]",
    "<start_of_turn>",
    "<|end|>",
    "<eoa>",
    "<|endoftext|>",
    "{{ x }}",
    "{% if %}",
]

_alphabet = st.characters(
    blacklist_categories=("Cs",),  # no lone surrogates
    blacklist_characters="\x00",
)
words = st.sampled_from(
    ["hello", "weather", "Shanghai", "你好", "世界", "🙂", "🚀", "x", "42", " ", "\n", "\t"]
)


@st.composite
def texts(draw: st.DrawFn, *, min_size: int = 0) -> str:
    """Message text: words, look-alike control strings, CJK/emoji, whitespace at both ends."""
    parts = draw(
        st.lists(
            st.one_of(words, st.sampled_from(LOOKALIKES), st.text(_alphabet, max_size=8)),
            min_size=min_size,
            max_size=6,
        )
    )
    text = "".join(parts)
    if draw(st.booleans()):
        text = (
            draw(st.sampled_from([" ", "\n", "  ", "\n\n", "\t"]))
            + text
            + draw(st.sampled_from(["", " ", "\n", "  \n"]))
        )
    return text


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "description": "The city and state, e.g. San Francisco, CA",
                },
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}
TOOLS = [WEATHER_TOOL, SEARCH_TOOL]


@st.composite
def tool_call_lists(
    draw: st.DrawFn, *, max_calls: int = 3, with_ids: bool = True
) -> list[dict[str, Any]]:
    """One or more (parallel) tool calls with arguments as JSON strings."""
    n = draw(st.integers(1, max_calls))
    calls = []
    for k in range(n):
        name = draw(st.sampled_from(["get_current_weather", "search"]))
        if name == "search":
            args: dict[str, Any] = {"query": draw(texts())}
        else:
            args = {"location": draw(texts(min_size=1))}
            if draw(st.booleans()):
                args["unit"] = draw(st.sampled_from(["celsius", "fahrenheit"]))
        call: dict[str, Any] = {
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }
        if with_ids:
            call["id"] = draw(st.sampled_from(["call_", "abc", "A1b2C3d4E"])) + str(k)
        calls.append(call)
    return calls


@st.composite
def conversations(
    draw: st.DrawFn,
    *,
    system: bool | None = None,
    tools: bool = False,
    reasoning: bool = False,
    max_turns: int = 4,
    end_with: str = "user",
) -> dict[str, Any]:
    """A valid OpenAI-style conversation: ``{"messages": [...], "tools": [...] | None}``.

    ``system`` None means maybe; ``end_with`` is ``user``, ``assistant``, ``tool`` or ``any``.
    """
    msgs: list[dict[str, Any]] = []
    if system or (system is None and draw(st.booleans())):
        msgs.append({"role": "system", "content": draw(texts())})
    turns = draw(st.integers(1, max_turns))
    for t in range(turns):
        msgs.append({"role": "user", "content": draw(texts())})
        last = t == turns - 1
        if last and end_with == "user":
            break
        if tools and draw(st.booleans()):
            calls = draw(tool_call_lists())
            msg: dict[str, Any] = {
                "role": "assistant",
                "content": draw(st.one_of(st.none(), texts())),
                "tool_calls": calls,
            }
            if reasoning and draw(st.booleans()):
                msg["reasoning_content"] = draw(texts())
            msgs.append(msg)
            for call in calls:
                msgs.append(
                    {"role": "tool", "tool_call_id": call.get("id"), "content": draw(texts())}
                )
            if last and end_with == "tool":
                break
        msg = {"role": "assistant", "content": draw(texts())}
        if reasoning and draw(st.booleans()):
            msg["reasoning_content"] = draw(texts())
        msgs.append(msg)
    return {"messages": msgs, "tools": TOOLS if tools else None}
