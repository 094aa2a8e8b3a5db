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
        [--workers 1] [--load burst|steady] [--token-ms 0] [--seconds 10]

``--load burst`` (default) sends all requests at the same moment; ``--load steady`` keeps
``--concurrency`` streams in flight (each client sends its next request when its last one
ended), which with ``--token-ms`` (the engine's time per token) is how a server sees
concurrent users.
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


def _request(
    gateway: str, backend: str, prompt_of: Any, through: bool, tag: str
) -> tuple[str, dict[str, Any], bool]:
    """URL, body and whether it is a chat request, for one tagged request."""
    if through:
        body = {
            "model": "qwen2.5",
            "messages": [{"role": "user", "content": f"Say {tag}"}],
            "stream": True,
            "max_tokens": 256,
        }
        return gateway + "/chat/completions", body, True
    body = {"model": "fake", "prompt": prompt_of(tag), "stream": True, "max_tokens": 256}
    return backend + "/completions", body, False


def _outcome(results: list[Any], tags: list[str]) -> dict[str, Any]:
    errors = [r for r in results if isinstance(r, BaseException)]
    ok = [r for r in results if not isinstance(r, BaseException)]
    crossed = sum(
        1
        for tag, r in zip(tags, results)
        if not isinstance(r, BaseException) and not r[2].startswith(f"{tag} ")
    )
    return {"ok": ok, "errors": errors, "crossed": crossed}


async def round_(
    gateway: str, backend: str, n: int, prompt_of: Any, through: bool
) -> dict[str, Any]:
    """A burst: ``n`` requests sent at the same moment."""
    connector = aiohttp.TCPConnector(limit=n)
    async with aiohttp.ClientSession(connector=connector) as session:
        tags = [f"req-{i}" for i in range(n)]
        jobs = [one(session, *_request(gateway, backend, prompt_of, through, t)) for t in tags]
        results = await asyncio.gather(*jobs, return_exceptions=True)
    return {**_outcome(results, tags), "sent": n}


async def steady(
    gateway: str,
    backend: str,
    n: int,
    prompt_of: Any,
    through: bool,
    stream_s: float,
    seconds: float,
) -> dict[str, Any]:
    """Steady load: ``n`` streams always in flight for ``seconds``.

    Client ``i`` starts ``i * stream_s / n`` seconds in and sends its next request as soon as
    its last one ended, so arrivals are spread the way ``n`` concurrent users produce them.
    Requests started during the first ``stream_s`` (the ramp) are not counted.
    """
    connector = aiohttp.TCPConnector(limit=n)
    tags: list[str] = []
    results: list[Any] = []
    t0 = time.perf_counter()
    sent = 0

    async def client(i: int, session: aiohttp.ClientSession) -> None:
        await asyncio.sleep(i * stream_s / n)
        k = 0
        while time.perf_counter() - t0 < stream_s + seconds:
            nonlocal sent
            tag = f"req-{i * 100000 + k}"
            k += 1
            sent += 1
            counted = time.perf_counter() - t0 >= stream_s
            try:
                result: Any = await one(
                    session, *_request(gateway, backend, prompt_of, through, tag)
                )
            except Exception as exc:  # counted as an error below
                result = exc
            if counted:
                tags.append(tag)
                results.append(result)

    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(client(i, session) for i in range(n)))
    return {**_outcome(results, tags), "sent": sent}


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1, help="gateway worker processes")
    ap.add_argument(
        "--load",
        choices=("burst", "steady"),
        default="burst",
        help="burst: all requests at once; steady: --concurrency streams always in flight",
    )
    ap.add_argument(
        "--token-ms", type=float, default=0.0, help="the engine's time between events (ms)"
    )
    ap.add_argument("--seconds", type=float, default=10.0, help="steady load: seconds per round")
    args = ap.parse_args()
    backend_proc, backend = start(args.tokens, args.token_ms)
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
        stream_s = args.tokens * args.token_ms / 1000

        def load(through: bool) -> dict[str, Any]:
            if args.load == "burst":
                return asyncio.run(round_(gateway, backend, args.concurrency, prompt_of, through))
            return asyncio.run(
                steady(
                    gateway,
                    backend,
                    args.concurrency,
                    prompt_of,
                    through,
                    max(stream_s, 0.2),
                    args.seconds,
                )
            )

        for _ in range(args.rounds):
            before = _cpu_seconds(gateway_proc.pid)
            runs["gateway"].append(load(True))
            cpu += (_cpu_seconds(gateway_proc.pid) - before) / max(
                1, len(runs["gateway"][-1]["ok"])
            )
            runs["direct"].append(load(False))
    finally:
        for proc in (gateway_proc, backend_proc):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)
    mode = (
        f"{args.concurrency} concurrent streaming requests at once"
        if args.load == "burst"
        else f"{args.concurrency} streams always in flight for {args.seconds:g} s"
    )
    print(
        f"{mode} × {args.rounds} rounds, {args.tokens} events each "
        f"{args.token_ms:g} ms apart, {args.workers} gateway worker(s) (qwen2.5 template)"
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
    print(f"gateway CPU per request: {cpu / args.rounds * 1000:.2f} ms")


if __name__ == "__main__":
    main()
