"""LMDeploy's own OpenAI chat handler, streamed and whole, with chatfmt's parsers by name.

A fake engine yields a Qwen3 output token by token (real tokenizer, no model); the handler,
its ChatRunner and the parser selection (``api_server.set_parsers``) are LMDeploy's own.
Runs in the LMDeploy venv (``tests/engines/lmdeploy/run.py``); skipped elsewhere.
"""

from __future__ import annotations

import pytest

pytest.importorskip("lmdeploy.serve.openai.api_server", reason="LMDeploy is not installed")

from engine_pieces import CHATFMT_PAIRS, check_serving_case
from fake_lmdeploy import MODEL, chat_endpoint, run_chat

from chatfmt.integrations.lmdeploy import register


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(("tool", "reasoning"), [*CHATFMT_PAIRS, ("qwen3", "default")])
def test_chat_completions(tool, reasoning, stream):
    register()

    def run(tokenizer, pieces, body):
        return run_chat(*chat_endpoint(tool, reasoning, tokenizer), pieces, body)

    check_serving_case(run, MODEL, stream)
