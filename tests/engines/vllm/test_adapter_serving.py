"""vLLM's own chat serving code (``OpenAIServingChat``) with chatfmt's parsers, no model.

A fake engine yields the token ids of a model output one token at a time, as vLLM's engine
does; the serving layer is configured as ``vllm serve … --enable-auto-tool-choice
--tool-call-parser chatfmt-<name> --reasoning-parser chatfmt-<name>`` (and the
template-derived ``chatfmt``), streamed and whole. Runs in the vLLM test environment
(``tests/engines/vllm/setup.sh``); skipped elsewhere.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "vllm.tool_parsers", reason="vLLM is not installed (tests/engines/vllm/setup.sh)"
)

from fake_serving import run_streamed, run_whole
from fake_serving import serving as _serving

TOKENIZERS = Path(os.environ.get("CHATFMT_SHARED", Path(__file__).parents[4] / "shared")) / (
    "tokenizers"
)

ARGS = {"city": "Paris", "days": 3}


def serving(folder: str, tool_parser: str | None, reasoning_parser: str | None) -> Any:
    """The chat serving code on the local tokenizer ``folder`` (skipped when absent)."""
    path = TOKENIZERS / folder
    if not path.exists():
        pytest.skip(f"no local tokenizer {path}")
    return _serving(path, tool_parser, reasoning_parser)


#: (tokenizer, tool parser, reasoning parser, model output): formats vLLM's tests cover, on
#: the local tokenizers that decode them as written (the local DeepSeek V3 tokenizer's
#: decoder writes its markers' "▁" as spaces, so it cannot carry DeepSeek's format here; the
#: local Llama 3.1 tokenizer's chat template has no tool calls to derive a parser from).
CASES = {
    "hermes+qwen3": (
        "qwen3",
        "chatfmt-hermes",
        "chatfmt-qwen3",
        "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>',
    ),
    "template (qwen3)": (
        "qwen3",
        "chatfmt",
        "chatfmt",
        "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>',
    ),
    "llama3_json": (
        "llama3_1",
        "chatfmt-llama3_json",
        None,
        '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}',
    ),
    "pythonic": ("qwen3", "chatfmt-pythonic", None, '[get_weather(city="Paris", days=3)]'),
    "mistral": (
        "qwen3",
        "chatfmt-mistral",
        None,
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]',
    ),
    "qwen3_coder": (
        "qwen3",
        "chatfmt-qwen3_coder",
        "chatfmt-qwen3",
        "<think>\nweather\n</think>\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
        "</function>\n</tool_call>",
    ),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("step", [1, 3])
def test_streamed(case: str, step: int) -> None:
    folder, tool, reasoning, text = CASES[case]
    got = run_streamed(serving(folder, tool, reasoning), text, step)
    assert [(c["name"], json.loads(c["arguments"])) for c in got["calls"].values()] == [
        ("get_weather", ARGS)
    ]
    assert got["finish"] == "tool_calls"
    if reasoning is not None:
        assert got["reasoning"].strip()
        assert "<think>" not in got["content"] and "</think>" not in got["content"]
    assert "get_weather" not in got["content"]


@pytest.mark.parametrize("case", CASES)
def test_whole(case: str) -> None:
    folder, tool, reasoning, text = CASES[case]
    choice = run_whole(serving(folder, tool, reasoning), text)
    calls = choice.message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", ARGS)
    ]
    assert choice.finish_reason == "tool_calls"
    if reasoning is not None:
        assert (choice.message.reasoning or "").strip()
    assert "get_weather" not in (choice.message.content or "")


def test_streamed_equals_whole() -> None:
    folder, tool, reasoning, text = CASES["hermes+qwen3"]
    chat = serving(folder, tool, reasoning)
    streamed = run_streamed(chat, text)
    whole = run_whole(chat, text)
    assert streamed["reasoning"] == whole.message.reasoning
    assert streamed["content"].strip() == (whole.message.content or "").strip()
    assert streamed["calls"][0]["arguments"] == whole.message.tool_calls[0].function.arguments


def test_plain_answer_has_no_calls() -> None:
    chat = serving("qwen3", "chatfmt-hermes", "chatfmt-qwen3")
    text = "<think>\nEasy.\n</think>\n\nHello there, how are you?"
    got = run_streamed(chat, text)
    assert (got["reasoning"], got["content"], got["calls"]) == (
        "\nEasy.\n",  # vLLM's reasoning API: the text around the markers as written
        "\n\nHello there, how are you?",
        {},
    )
    assert got["finish"] == "stop"
    choice = run_whole(chat, text)
    assert (choice.message.reasoning, choice.message.content) == ("\nEasy.\n", got["content"])
