"""Time to first token and tokens/s of the embedded model: through chatfmt's agent vs llama-cpp-python.

Both sides run the same prompt ids with greedy sampling and the same token limit, in
one process, interleaved, with llama.cpp's prompt cache reset before each run. chatfmt's own overhead per turn is measured directly: the
turn's wall time minus the time spent inside llama.cpp's generator (render, encode,
the stream parser and the event plumbing are what is left).

    python benchmarks/bench_chat.py [--rounds 5] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from chatfmt.agent import Agent
from chatfmt.agent.events import TextDelta
from chatfmt.backends import CompletionChunk, CompletionRequest
from chatfmt.backends.llamacpp import LlamaCppBackend

QUESTIONS = [
    "What is the capital of France?",
    "Write one sentence about the sea.",
    "Name three colours.",
    "What is 12 times 12?",
]


class TimedBackend(LlamaCppBackend):
    """Counts the wall time spent inside llama.cpp's generation for each request."""

    engine_seconds = 0.0

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        inner = super().stream(request)
        while True:
            start = time.perf_counter()
            try:
                chunk = await inner.__anext__()
            except StopAsyncIteration:
                TimedBackend.engine_seconds += time.perf_counter() - start
                return
            TimedBackend.engine_seconds += time.perf_counter() - start
            yield chunk


def direct(model: Any, ids: list[int], max_tokens: int) -> tuple[float, int, float]:
    """(time to first token, tokens, seconds) calling llama-cpp-python directly."""
    start = time.perf_counter()
    first = None
    n = 0
    for part in model.create_completion(
        ids, max_tokens=max_tokens, temperature=0.0, stream=True, stop=["<|im_end|>"]
    ):
        if first is None:
            first = time.perf_counter() - start
        if part["choices"][0].get("text"):
            n += 1
    return first or 0.0, n, time.perf_counter() - start


async def via_chatfmt(agent: Agent, question: str) -> tuple[float, int, float, float]:
    """(time to first token, tokens, seconds, chatfmt overhead seconds) through the agent."""
    TimedBackend.engine_seconds = 0.0
    start = time.perf_counter()
    first = None
    n = 0
    async for event in agent.astream_chat([{"role": "user", "content": question}]):
        if isinstance(event, TextDelta):
            if first is None:
                first = time.perf_counter() - start
            n += 1
    total = time.perf_counter() - start
    return first or 0.0, n, total, total - TimedBackend.engine_seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()

    backend = TimedBackend()
    model = backend.load()
    agent = Agent(
        backend,
        template=str(backend.model_path),
        sampling={"max_tokens": args.max_tokens, "temperature": 0.0},
    )
    from chatfmt import encode

    rows: dict[str, list[tuple[float, ...]]] = {"chatfmt": [], "llama-cpp-python": []}
    asyncio.run(via_chatfmt(agent, "warm up"))  # model load and first-call costs
    for _ in range(args.rounds):
        for question in QUESTIONS:
            ids = encode(
                [{"role": "user", "content": question}],
                agent.template,
                backend.tokenizer,
                add_generation_prompt=True,
            ).input_ids
            model.reset()  # no prompt-prefix cache reuse between the two sides
            rows["llama-cpp-python"].append(direct(model, list(ids), args.max_tokens))
            model.reset()
            rows["chatfmt"].append(asyncio.run(via_chatfmt(agent, question)))

    print(
        f"embedded SmolLM2-135M-Instruct, greedy, ≤ {args.max_tokens} tokens, "
        f"{args.rounds} × {len(QUESTIONS)} turns each, interleaved"
    )
    print(
        f"{'':18} {'TTFT p50 ms':>12} {'tokens/s':>10} {'turn ms':>9} {'chatfmt overhead ms':>20}"
    )
    for name, data in rows.items():
        ttft = statistics.median(r[0] for r in data) * 1000
        rate = sum(r[1] for r in data) / sum(r[2] for r in data)
        turn = statistics.median(r[2] for r in data) * 1000
        overhead = (
            f"{statistics.median(r[3] for r in data) * 1000:.2f}" if len(data[0]) > 3 else "-"
        )
        print(f"{name:18} {ttft:12.1f} {rate:10.1f} {turn:9.1f} {overhead:>20}")
    over = [r[3] * 1000 for r in rows["chatfmt"]]
    print(
        f"chatfmt overhead per turn: p50 {statistics.median(over):.2f} ms, max {max(over):.2f} ms "
        "(target: under 5 ms)"
    )


if __name__ == "__main__":
    main()
