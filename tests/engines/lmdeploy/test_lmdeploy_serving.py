"""LMDeploy's own OpenAI chat handler, streamed and whole, with chatfmt's parsers by name.

A fake engine yields a Qwen3 output token by token (real tokenizer, no model); the handler,
its ChatRunner and the parser selection (``api_server.set_parsers``) are LMDeploy's own.
Runs in the LMDeploy venv (``tests/engines/lmdeploy/run.py``); skipped elsewhere.
"""

from __future__ import annotations

import pytest

pytest.importorskip("lmdeploy.serve.openai.api_server", reason="LMDeploy is not installed")

from engine_pieces import OUTPUT, check_streamed, check_whole, load_tokenizer, payload, token_pieces
from fake_lmdeploy import MODEL, chat_endpoint, run_chat

from chatfmt.integrations.lmdeploy import register

#: chatfmt's named parsers, the template-derived ones, and LMDeploy's own for reference
PARSERS = [("chatfmt-hermes", "chatfmt-qwen3"), ("chatfmt", "chatfmt"), ("qwen3", "default")]


@pytest.fixture(scope="module")
def tokenizer():
    found = load_tokenizer("qwen3")
    if found is None:
        pytest.skip("no local Qwen3 tokenizer (../shared/tokenizers/qwen3)")
    return found


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(("tool", "reasoning"), PARSERS)
def test_chat_completions(tokenizer, tool, reasoning, stream):
    register()
    endpoint, context = chat_endpoint(tool, reasoning, tokenizer)
    result = run_chat(endpoint, context, token_pieces(OUTPUT, tokenizer), payload(MODEL, stream))
    (check_streamed if stream else check_whole)(result)
