"""``CHATFMT_VLLM_TOOL_CHOICE=chatfmt``: ``tool_choice`` required or named, through vLLM's chat
endpoint, constrained with chatfmt's constraint of the model's own call format.

The request goes through vLLM's ``OpenAIServingChat.create_chat_completion`` (the parser's
``adjust_request``, the sampling parameters) to a fake engine; the structural tag the engine
gets is compiled with xgrammar (vLLM's structured-output backend) against the real tokenizer,
and the model's output is parsed back by chatfmt, streamed and whole. Needs chatfmt's grammar
builder (llama-cpp-python's JSON-schema converter, ``chatfmt[embedded]``) in the vLLM venv.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "vllm.tool_parsers", reason="vLLM is not installed (tests/engines/vllm/setup.sh)"
)
pytest.importorskip("llama_cpp", reason="chatfmt's grammars need chatfmt[embedded]")

import xgrammar as xgr
from engine_pieces import qwen3_tokenizer_or_skip, shared_tokenizer_dir
from fake_serving import WEATHER, run_request, serving
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

import chatfmt.integrations.vllm as cv

REASONING = "<think>\nThe user wants the weather.\n</think>\n\n"
CALL = (
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'
)
NAMED = {"type": "function", "function": {"name": "get_weather"}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}


@pytest.fixture
def chatfmt_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The plugin as imported under ``CHATFMT_VLLM_TOOL_CHOICE=chatfmt`` (restored after)."""
    monkeypatch.setenv(cv.TOOL_CHOICE_ENV, "chatfmt")
    module = importlib.reload(cv)
    yield module
    monkeypatch.delenv(cv.TOOL_CHOICE_ENV)
    importlib.reload(module)


def _request(choice: Any, stream: bool) -> ChatCompletionRequest:
    return ChatCompletionRequest(
        model="m",
        messages=[{"role": "user", "content": "Weather in Paris for 3 days?"}],
        tools=[WEATHER, TIME],
        tool_choice=choice,
        stream=stream,
    )


def _accepts(tag: str, text: str) -> bool:
    """Whether xgrammar's matcher of structural tag ``tag`` takes ``text`` token by token, then
    the end of the turn."""
    tokenizer = qwen3_tokenizer_or_skip()
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tokenizer))
    matcher = xgr.GrammarMatcher(compiled.compile_structural_tag(tag))
    ids = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
    return all(matcher.accept_token(i) for i in ids) and matcher.is_terminated()


def _calls(response: Any, stream: bool) -> tuple[list[tuple[str, Any]], str, str]:
    """(name, arguments) per call, the reasoning text and the finish reason."""
    if not stream:
        choice = response.choices[0]
        calls = [
            (c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls
        ]
        return calls, choice.message.reasoning or "", choice.finish_reason
    found: dict[int, list[Any]] = {}
    reasoning, finish = "", ""
    for event in response:
        for choice in event["choices"]:
            delta = choice.get("delta") or {}
            reasoning += delta.get("reasoning") or ""
            for call in delta.get("tool_calls") or ():
                entry = found.setdefault(call["index"], ["", ""])
                entry[0] += (call.get("function") or {}).get("name") or ""
                entry[1] += (call.get("function") or {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    calls = [(name, json.loads(args)) for name, args in (found[i] for i in sorted(found))]
    return calls, reasoning, finish


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("choice", ["required", NAMED], ids=["required", "named"])
def test_tool_choice_constrained_by_chatfmt(chatfmt_choice: Any, choice: Any, stream: bool) -> None:
    tokenizer_dir: Path = shared_tokenizer_dir("qwen3")
    qwen3_tokenizer_or_skip()
    chat = serving(tokenizer_dir, "chatfmt-hermes", "chatfmt-qwen3")
    params, response = run_request(chat, _request(choice, stream), REASONING + CALL)
    tag = params.structured_outputs.structural_tag
    assert tag is not None and params.structured_outputs.json is None  # not vLLM's JSON list
    # the constraint is the model's own call format: it takes the call as the model writes it
    # (after the reasoning, which vLLM leaves unconstrained) and refuses what is not a call
    assert _accepts(tag, CALL)
    assert not _accepts(tag, "It is sunny.")
    assert _accepts(tag, CALL.replace("get_weather", "get_time")) == (choice == "required")
    calls, reasoning, finish = _calls(response, stream)
    assert calls == [("get_weather", {"city": "Paris", "days": 3})]
    assert reasoning.strip() == "The user wants the weather."
    assert finish == ("tool_calls" if choice == "required" else "stop")  # OpenAI: a forced
    # named tool ends with "stop"


def test_default_leaves_tool_choice_to_vllm() -> None:
    """Without the variable, ``required`` gets what vLLM's own Hermes parser gets."""
    qwen3_tokenizer_or_skip()
    got = []
    for parser in ("chatfmt-hermes", "hermes"):
        chat = serving(shared_tokenizer_dir("qwen3"), parser, "chatfmt-qwen3")
        params, _ = run_request(chat, _request("required", False), CALL)
        got.append(params.structured_outputs)
    assert got[0] == got[1]
