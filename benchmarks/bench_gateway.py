"""The gateway under load: 200 concurrent streaming chat requests, against the backend called directly.

A fake completions backend (its own process on 127.0.0.1) streams ``--tokens`` events per
request and echoes the request's tag (found in the prompt), so a stream that reached the
wrong client is detected. ``chatfmt serve`` (its own process, one worker) sits in front of
it with the ``qwen2.5`` template. The client sends ``--concurrency`` streaming requests at
once through the gateway (``/v1/chat/completions``) and, in the same run, directly to the
backend (``/v1/completions`` with the same prompt), rounds interleaved. Reported: errors,
crossed streams, time to first token and total time (p50, p99) for both, the gateway's added
time, and the gateway process's CPU time per request.

    python benchmarks/bench_gateway.py [--concurrency 200] [--tokens 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import aiohttp
from _sse_engine import free_port, start, wait_port

import chatfmt


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children (the workers of `--workers`)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as fh:
            total += sum(_cpu_seconds(int(child)) for child in fh.read().split())
    return total


async def _sse_texts(resp: aiohttp.ClientResponse, chat: bool) -> Any:
    async for raw in resp.content:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        event = json.loads(data)
        if "error" in event:
            raise RuntimeError(event["error"])
        for choice in event.get("choices") or ():
            text = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
            if text:
                yield text


async def one(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], chat: bool
) -> tuple[float, float, str]:
    start = time.perf_counter()
    first = 0.0
    parts: list[str] = []
    async with session.post(url, json=body) as resp:
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {await resp.text()}")
        async for text in _sse_texts(resp, chat):
            if not first:
                first = time.perf_counter() - start
            parts.append(text)
    return first, time.perf_counter() - start, "".join(parts)


async def round_(
    gateway: str, backend: str, n: int, prompt_of: Any, through: bool
) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=n)
    async with aiohttp.ClientSession(connector=connector) as session:
        jobs = []
        for i in range(n):
            tag = f"req-{i}"
            if through:
                body = {
                    "model": "qwen2.5",
                    "messages": [{"role": "user", "content": f"Say {tag}"}],
                    "stream": True,
                    "max_tokens": 256,
                }
                jobs.append(one(session, gateway + "/chat/completions", body, True))
            else:
                body = {
                    "model": "fake",
                    "prompt": prompt_of(tag),
                    "stream": True,
                    "max_tokens": 256,
                }
                jobs.append(one(session, backend + "/completions", body, False))
        results = await asyncio.gather(*jobs, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    ok = [r for r in results if not isinstance(r, BaseException)]
    crossed = sum(
        1
        for i, r in enumerate(results)
        if not isinstance(r, BaseException) and not r[2].startswith(f"req-{i} ")
    )
    return {"ok": ok, "errors": errors, "crossed": crossed}


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1, help="gateway worker processes")
    args = ap.parse_args()
    backend_proc, backend = start(args.tokens)
    gport = free_port()
    gateway_proc = None
    try:
        gateway_proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chatfmt.cli",
                "serve",
                "--backend",
                backend,
                "--template",
                "qwen2.5",
                "--model-name",
                "qwen2.5",
                "--port",
                str(gport),
                "--log-level",
                "warning",
                "--workers",
                str(args.workers),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(gport)
        gateway = f"http://127.0.0.1:{gport}/v1"
        tpl = chatfmt.get_template("qwen2.5")

        def prompt_of(tag: str) -> str:
            return tpl.render([{"role": "user", "content": f"Say {tag}"}])

        asyncio.run(round_(gateway, backend, 20, prompt_of, True))  # warm up
        asyncio.run(round_(gateway, backend, 20, prompt_of, False))
        runs: dict[str, list[dict[str, Any]]] = {"gateway": [], "direct": []}
        cpu = 0.0
        for _ in range(args.rounds):
            before = _cpu_seconds(gateway_proc.pid)
            runs["gateway"].append(
                asyncio.run(round_(gateway, backend, args.concurrency, prompt_of, True))
            )
            cpu += _cpu_seconds(gateway_proc.pid) - before
            runs["direct"].append(
                asyncio.run(round_(gateway, backend, args.concurrency, prompt_of, False))
            )
    finally:
        for proc in (gateway_proc, backend_proc):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)
    n = args.concurrency * args.rounds
    print(
        f"{args.concurrency} concurrent streaming requests × {args.rounds} rounds, "
        f"{args.tokens} events each, {args.workers} gateway worker(s) (qwen2.5 template)"
    )
    print(
        f"{'':10} {'errors':>7} {'crossed':>8} {'TTFT p50':>9} {'TTFT p99':>9} {'total p50':>10} {'total p99':>10}  (ms)"
    )
    stats = {}
    for name, rs in runs.items():
        ok = [r for run in rs for r in run["ok"]]
        errors = sum(len(run["errors"]) for run in rs)
        crossed = sum(run["crossed"] for run in rs)
        ttft = [r[0] for r in ok]
        total = [r[1] for r in ok]
        stats[name] = (statistics.median(ttft) * 1000, statistics.median(total) * 1000)
        print(
            f"{name:10} {errors:7d} {crossed:8d} {_pct(ttft, 0.5):9.2f} {_pct(ttft, 0.99):9.2f} "
            f"{_pct(total, 0.5):10.2f} {_pct(total, 0.99):10.2f}"
        )
    print(
        f"gateway added time to first token, p50: {stats['gateway'][0] - stats['direct'][0]:.2f} ms; "
        f"total p50: {stats['gateway'][1] - stats['direct'][1]:.2f} ms"
    )
    print(f"gateway CPU per request: {cpu / n * 1000:.2f} ms")


if __name__ == "__main__":
    main()
