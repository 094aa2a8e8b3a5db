"""Client CPU per streamed completion: chatfmt's aiohttp backend vs an httpx ``AsyncClient``.

The measurement behind the choice of HTTP client for ``OpenAICompletionsBackend``. A
completions server streaming server-sent events runs in a separate process on 127.0.0.1
(so its CPU is not counted); the client side opens ``--concurrency`` streams at once and
reads every event (JSON-decoded, text collected). Reported: the client process's CPU time
per request and the median time to first token, rounds interleaved.

    pip install httpx   # the peer, only for this benchmark
    python benchmarks/bench_http_client.py [--concurrency 200] [--tokens 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from _sse_engine import start

from chatfmt.backends import CompletionRequest
from chatfmt.backends.openai import OpenAICompletionsBackend


async def run_aiohttp(base: str, n: int) -> tuple[float, list[float]]:
    backend = OpenAICompletionsBackend(base, model="bench", max_connections=n)
    request = CompletionRequest("Hello", max_tokens=64)

    async def one() -> float:
        start = time.perf_counter()
        first = 0.0
        async for chunk in backend.stream(request):
            if chunk.text and not first:
                first = time.perf_counter() - start
        return first

    cpu = time.process_time()
    firsts = await asyncio.gather(*(one() for _ in range(n)))
    cpu = time.process_time() - cpu
    await backend.aclose()
    return cpu, list(firsts)


async def run_httpx(base: str, n: int) -> tuple[float, list[float]]:
    import httpx

    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    body = {"model": "bench", "prompt": "Hello", "max_tokens": 64, "stream": True}

    async def one(client: Any) -> float:
        start = time.perf_counter()
        first = 0.0
        parts: list[str] = []
        async with client.stream("POST", base + "/completions", json=body) as resp:
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                text = json.loads(data)["choices"][0]["text"]
                if text and not first:
                    first = time.perf_counter() - start
                parts.append(text)
        return first

    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        cpu = time.process_time()
        firsts = await asyncio.gather(*(one(client) for _ in range(n)))
        cpu = time.process_time() - cpu
    return cpu, list(firsts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    try:
        import httpx  # noqa: F401
    except ImportError:
        sys.exit("this benchmark compares against httpx: pip install httpx")
    server, base = start(args.tokens)
    try:
        results: dict[str, list[tuple[float, list[float]]]] = {"aiohttp": [], "httpx": []}
        asyncio.run(run_aiohttp(base, 10))  # warm up both
        asyncio.run(run_httpx(base, 10))
        for _ in range(args.rounds):
            results["aiohttp"].append(asyncio.run(run_aiohttp(base, args.concurrency)))
            results["httpx"].append(asyncio.run(run_httpx(base, args.concurrency)))
    finally:
        server.terminate()
        server.wait(timeout=10)
    n = args.concurrency
    print(f"{n} concurrent streams of {args.tokens} events, {args.rounds} rounds interleaved")
    print(f"{'client':10} {'CPU ms / request':>18} {'TTFT p50 ms':>12}")
    cpu_of = {}
    for name, runs in results.items():
        cpu_of[name] = statistics.median(cpu for cpu, _ in runs) / n * 1000
        ttft = statistics.median(t for _, firsts in runs for t in firsts) * 1000
        print(f"{name:10} {cpu_of[name]:18.2f} {ttft:12.1f}")
    print(f"httpx / aiohttp client CPU: {cpu_of['httpx'] / cpu_of['aiohttp']:.2f}×")


if __name__ == "__main__":
    main()
