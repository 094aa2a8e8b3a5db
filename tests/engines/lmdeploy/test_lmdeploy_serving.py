"""LMDeploy's own chat, Responses and Anthropic Messages handlers, streamed and whole, with
chatfmt's parsers by name.

A fake engine yields a Qwen3 output token by token (real tokenizer, no model); the handler,
its ChatRunner and the parser selection (``api_server.set_parsers``) are LMDeploy's own.
Runs in the LMDeploy venv (``tests/engines/lmdeploy/run.py``); skipped elsewhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("lmdeploy.serve.openai.api_server", reason="LMDeploy is not installed")

from engine_pieces import CHATFMT_PAIRS, check_serving_case, serve_case
from fake_lmdeploy import MODEL, chat_endpoint, endpoint, run_chat

from chatfmt.integrations.lmdeploy import register


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(("tool", "reasoning"), [*CHATFMT_PAIRS, ("qwen3", "default")])
def test_chat_completions(tool, reasoning, stream):
    register()

    def run(tokenizer, pieces, body):
        return run_chat(*chat_endpoint(tool, reasoning, tokenizer), pieces, body)

    check_serving_case(run, MODEL, stream)


#: The serving-path case's tools in the Responses and Anthropic Messages shapes.
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
RESPONSES = {
    "input": "Weather in Paris?",
    "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA}],
}
MESSAGES = {
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"name": "get_weather", "input_schema": SCHEMA}],
}


def _responses_output(result: Any, stream: bool) -> tuple[str, list[tuple[str, Any]]]:
    """(text, calls) of a Responses result; streamed, the deltas must add up to the items."""
    if stream:
        final = result[-1]
        assert final["type"] == "response.completed"
        deltas = {e["type"]: "" for e in result}
        for event in result:
            if event["type"].endswith(".delta"):
                deltas[event["type"]] += event["delta"]
        output = final["response"]["output"]
    else:
        output, deltas = result["output"], None
    text = "".join(
        part["text"] for item in output if item["type"] == "message" for part in item["content"]
    )
    calls = [
        (i["name"], json.loads(i["arguments"])) for i in output if i["type"] == "function_call"
    ]
    if deltas is not None:
        assert deltas["response.output_text.delta"] == text
        assert json.loads(deltas["response.function_call_arguments.delta"]) == calls[0][1]
    return text, calls


def _messages_content(result: Any, stream: bool) -> list[tuple[str, Any]]:
    """(block type, value) per content block of a Messages result (streamed: folded)."""
    if not stream:
        values = {"thinking": "thinking", "text": "text", "tool_use": "input"}
        return [(b["type"], b[values[b["type"]]]) for b in result["content"]]
    blocks: list[list[Any]] = []
    for event in result:
        if event["type"] == "content_block_start":
            block = event["content_block"]
            blocks.append([block["type"], block.get("name"), ""])
        elif event["type"] == "content_block_delta":
            delta = event["delta"]  # a thinking block's signature_delta carries no text
            for key in ("thinking", "text", "partial_json"):
                blocks[event["index"]][2] += delta.get(key, "")
    return [
        (kind, json.loads(text) if kind == "tool_use" else text) for kind, _name, text in blocks
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(("tool", "reasoning"), [*CHATFMT_PAIRS, ("qwen3", "default")])
def test_responses(tool, reasoning, stream):
    # LMDeploy 0.18's /v1/responses sends no reasoning items (with its own parsers too)
    register()

    def run(tokenizer, pieces, body):
        ep, context = endpoint("/v1/responses", tool, reasoning, tokenizer)
        return run_chat(
            ep, context, pieces, {"model": body["model"], "stream": stream, **RESPONSES}
        )

    text, calls = _responses_output(serve_case(run, MODEL, stream), stream)
    assert text.strip() == "Let me look."
    assert calls == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(("tool", "reasoning"), [*CHATFMT_PAIRS, ("qwen3", "default")])
def test_anthropic_messages(tool, reasoning, stream):
    register()

    def run(tokenizer, pieces, body):
        ep, context = endpoint("/v1/messages", tool, reasoning, tokenizer)
        return run_chat(ep, context, pieces, {"model": body["model"], "stream": stream, **MESSAGES})

    found = _messages_content(serve_case(run, MODEL, stream), stream)
    blocks = [(kind, v.strip() if isinstance(v, str) else v) for kind, v in found]
    assert blocks == [
        ("thinking", "The user wants the weather."),
        ("text", "Let me look."),
        ("tool_use", {"city": "Paris"}),
    ]
