"""SGLang's own chat serving (OpenAIServingChat), streamed and whole, with chatfmt's parsers.

A fake tokenizer manager yields a Qwen3 output token by token (real tokenizer, no model); the
handler, its parser construction per request and its end-of-stream bookkeeping are SGLang's
own, configured through SGLang's ServerArgs with the parser names.
Runs in the SGLang venv (``tests/engines/sglang/run.py``); skipped elsewhere.
"""

from __future__ import annotations

import pytest

pytest.importorskip("sglang.srt.entrypoints.openai", reason="SGLang is not installed")

from engine_pieces import CHATFMT_PAIRS, check_serving_case, shared_tokenizer_dir
from fake_sglang import MODEL, fake_model_dir, run_chat, serving_chat

from chatfmt.integrations.sglang import register


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(("tool", "reasoning"), [*CHATFMT_PAIRS, ("qwen", "qwen3")])
def test_chat_completions(tool, reasoning, stream):
    register()
    model_dir = fake_model_dir(shared_tokenizer_dir("qwen3"))

    def run(tokenizer, pieces, body):
        return run_chat(*serving_chat(model_dir, tokenizer, tool, reasoning), pieces, body)

    check_serving_case(run, MODEL, stream)
