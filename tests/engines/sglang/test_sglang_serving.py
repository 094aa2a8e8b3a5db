"""SGLang's own chat serving (OpenAIServingChat), streamed and whole, with chatfmt's parsers.

A fake tokenizer manager yields a Qwen3 output token by token (real tokenizer, no model); the
handler, its parser construction per request and its end-of-stream bookkeeping are SGLang's
own, configured through SGLang's ServerArgs with the parser names.
Runs in the SGLang venv (``tests/engines/sglang/run.py``); skipped elsewhere.
"""

from __future__ import annotations

import pytest

pytest.importorskip("sglang.srt.entrypoints.openai", reason="SGLang is not installed")

from engine_pieces import (
    OUTPUT,
    check_streamed,
    check_whole,
    load_tokenizer,
    payload,
    shared_tokenizer_dir,
    token_pieces,
)
from fake_sglang import MODEL, fake_model_dir, run_chat, serving_chat

from chatfmt.integrations.sglang import register

#: chatfmt's named parsers, the template-derived ones, and SGLang's own for reference
PARSERS = [("chatfmt-hermes", "chatfmt-qwen3"), ("chatfmt", "chatfmt"), ("qwen", "qwen3")]


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
    chat, manager = serving_chat(
        fake_model_dir(shared_tokenizer_dir("qwen3")), tokenizer, tool, reasoning
    )
    result = run_chat(chat, manager, token_pieces(OUTPUT, tokenizer), payload(MODEL, stream))
    (check_streamed if stream else check_whole)(result)
