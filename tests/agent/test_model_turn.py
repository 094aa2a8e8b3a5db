"""The turn layer below the agent and the gateway (chatfmt.turn): render_prompt's reasoning
fallback, ParsedTurn over a scripted backend, and the deprecated old import path."""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

import chatfmt
from chatfmt.backends import CompletionRequest, ScriptedBackend
from chatfmt.errors import UnsupportedFeatureError
from chatfmt.turn import ParsedTurn, render_prompt

QWQ = chatfmt.get_template("qwq")
CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
#: Reasoning after the last user message, which QwQ's format never shows again.
EARLIER = {"role": "assistant", "content": "", "reasoning_content": "Look.", "tool_calls": [CALL]}
HISTORY = [
    {"role": "user", "content": "Weather?"},
    EARLIER,
    {"role": "tool", "tool_call_id": "c1", "content": "Sunny."},
]
WITHOUT = [HISTORY[0], {k: v for k, v in EARLIER.items() if k != "reasoning_content"}, HISTORY[2]]


def test_the_format_refuses_old_reasoning_when_asked_directly() -> None:
    with pytest.raises(UnsupportedFeatureError) as info:
        QWQ.render(HISTORY)
    assert (info.value.index, info.value.field) == (1, "reasoning_content")


def test_a_conversation_is_rendered_without_the_refused_reasoning() -> None:
    conv = chatfmt.validate_conversation(HISTORY)
    prompt = render_prompt(QWQ, conv)
    assert prompt.text == QWQ.render(WITHOUT)
    assert isinstance(prompt.messages, chatfmt.Conversation)
    assert prompt.messages.messages[1].reasoning_content is None
    assert conv.messages[1].reasoning_content == "Look."  # the input is not changed
    assert prompt.ids is None and prompt.encoding is None


def test_message_dicts_are_rendered_without_the_refused_reasoning() -> None:
    history = list(HISTORY)
    prompt = render_prompt(QWQ, history)
    assert prompt.text == QWQ.render(WITHOUT)
    assert prompt.messages == WITHOUT
    assert history[1] is EARLIER and "reasoning_content" in EARLIER  # a copy was changed


def test_without_a_generation_prompt_the_refusal_stands() -> None:
    with pytest.raises(UnsupportedFeatureError) as info:
        render_prompt(QWQ, chatfmt.validate_conversation(HISTORY), add_generation_prompt=False)
    assert (info.value.index, info.value.field) == (1, "reasoning_content")


def test_the_input_is_returned_as_it_is_when_nothing_is_refused() -> None:
    conv = chatfmt.validate_conversation(WITHOUT)
    prompt = render_prompt(QWQ, conv)
    assert prompt.messages is conv and prompt.text == QWQ.render(WITHOUT)


def test_with_a_tokenizer_the_text_and_the_ids_come_from_one_encoding(shared_dir: Path) -> None:
    from chatfmt.tokens import encode, load_tokenizer

    tokenizer = load_tokenizer(shared_dir / "tokenizers" / "qwen3")
    prompt = render_prompt(QWQ, chatfmt.validate_conversation(HISTORY), tokenizer=tokenizer)
    expected = encode(WITHOUT, QWQ, tokenizer, add_generation_prompt=True)
    assert prompt.encoding is not None
    assert prompt.text == expected.text == prompt.encoding.text
    assert prompt.ids == tuple(expected.input_ids)


def test_parsed_turn_parses_the_prefill_then_the_backend_output() -> None:
    tpl = chatfmt.get_template("qwen2.5")
    tool: dict[str, Any] = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object"}},
    }
    backend = ScriptedBackend(['weather", "arguments": {"city": "Paris"}}\n</tool_call>'])
    request = CompletionRequest.for_template(tpl, "prompt")
    prefill = '<tool_call>\n{"name": "get_'
    turn = ParsedTurn.for_template(backend, request, tpl, tools=[tool], prefill=prefill)

    async def run() -> list[Any]:
        return [d async for batch in turn.deltas() for d in batch]

    message = chatfmt.merge_deltas(asyncio.run(run()))
    call = message["tool_calls"][0]["function"]
    assert call["name"] == "get_weather" and call["arguments"] == '{"city": "Paris"}'
    assert turn.parser.finish_reason == "tool_calls"
    assert turn.text.startswith(prefill) and turn.raw[0] == prefill


def test_the_old_agent_turn_path_warns_and_still_works() -> None:
    sys.modules.pop("chatfmt.agent.turn", None)
    with pytest.warns(DeprecationWarning, match=r"chatfmt\.turn"):
        old = importlib.import_module("chatfmt.agent.turn")
    assert old.ParsedTurn is ParsedTurn
    history = list(HISTORY)
    text, ids = old.prompt_for(QWQ, history, None, {})
    assert (text, ids) == (QWQ.render(WITHOUT), None)
    assert history == WITHOUT  # updated in place, as before
