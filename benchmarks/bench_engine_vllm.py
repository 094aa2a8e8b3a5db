"""vLLM's chat serving path with vLLM's own tool parsers and with chatfmt's, no model.

A fake engine feeds vLLM 0.33's ``OpenAIServingChat.chat_completion_stream_generator`` the
token ids of one tool call whose JSON arguments are 10 KB and 100 KB (Qwen3's tokenizer, one
token per step, as vLLM's engine does; Llama 3 JSON is left out: vLLM's parser refuses the
local Llama 3.1 tokenizer, which has no ``<|python_tag|>`` token); the table gives the wall time of the whole stream,
the cost per token and the growth from 10 KB to 100 KB (linear is ≈ 10x) for:

* no parser (the serving code alone: the baseline every row includes),
* ``--tool-call-parser hermes`` vs ``chatfmt-hermes``,
* ``hermes`` + ``--reasoning-parser qwen3`` vs ``chatfmt-hermes`` + ``chatfmt-qwen3``.

A row whose 10 KB run projects past ``--limit`` seconds at 100 KB (its parser's part of the
10 KB time grown 100x, as a quadratic parser's is) is not run at 100 KB (shown as ``>`` it). Runs in the vLLM test environment::

    bash tests/engines/vllm/setup.sh
    .engines/vllm/bin/python benchmarks/bench_engine_vllm.py [--limit 60]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "engines" / "vllm"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from fake_serving import frames, outputs, serving  # noqa: E402

SHARED = Path(os.environ.get("CHATFMT_SHARED", ROOT.parent.parent / "shared"))
TOKENIZER = SHARED / "tokenizers" / "qwen3"


def payload(size: int, style: str) -> str:
    """A model output with one call whose JSON arguments are about ``size`` bytes."""
    words = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")
    text: list[str] = []
    length = 0
    while length < size:
        word = words[len(text) % len(words)]
        text.append(word)
        length += len(word) + 1
    args = json.dumps({"city": "Paris", "notes": " ".join(text)})
    call = '<tool_call>\n{"name": "get_weather", "arguments": ' + args + "}\n</tool_call>"
    if style == "reasoning":
        return "<think>\nThe user wants the weather.\n</think>\n\n" + call
    return call


ROWS = [
    ("serving code alone", None, None, "hermes"),
    ("vLLM hermes", "hermes", None, "hermes"),
    ("chatfmt-hermes", "chatfmt-hermes", None, "hermes"),
    ("vLLM hermes + qwen3", "hermes", "qwen3", "reasoning"),
    ("chatfmt-hermes + chatfmt-qwen3", "chatfmt-hermes", "chatfmt-qwen3", "reasoning"),
]


def measure(chat: Any, text: str) -> tuple[float, int]:
    """Seconds to stream ``text`` through the serving code, and its token count."""
    engine_outputs = outputs(chat.renderer.tokenizer, text, 1)
    start = time.perf_counter()
    sent = frames(chat, engine_outputs)
    elapsed = time.perf_counter() - start
    assert any('"finish_reason"' in f for f in sent)
    return elapsed, len(engine_outputs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=60.0, help="skip 100 KB runs projected past it")
    args = ap.parse_args()
    if not TOKENIZER.exists():
        sys.exit(f"no tokenizer at {TOKENIZER} (set CHATFMT_SHARED)")
    print(f"{'parser':34} {'10 KB s':>9} {'100 KB s':>9} {'µs/token':>9} {'growth':>7}")
    base: dict[int, float] = {}
    for label, tool, reasoning, style in ROWS:
        chat = serving(TOKENIZER, tool, reasoning)
        measure(chat, payload(1_000, style))  # warm-up: first-use caches, imports
        small = min(measure(chat, payload(10_000, style))[0] for _ in range(2))
        # worst case (a parser quadratic in the output): its own part grows 100x
        projected = base.get(100_000, 0.0) + (small - base.get(10_000, 0.0)) * 100
        if tool is not None and projected > args.limit:
            print(f"{label:34} {small:9.2f} {'>' + format(projected, '.0f'):>9} {'':>9} {'':>7}")
            continue
        large, tokens_large = measure(chat, payload(100_000, style))
        if tool is None:
            base = {10_000: small, 100_000: large}
        per_token = large / tokens_large * 1e6
        print(
            f"{label:34} {small:9.2f} {large:9.2f} {per_token:9.1f} {large / small:6.1f}x"
            + ("" if tool is None else f"   (minus serving code: {large - base[100_000]:.2f} s)")
        )


if __name__ == "__main__":
    main()
