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
import re
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

import aiohttp

import chatfmt

TAG = re.compile(r"req-\d+")


def backend_main(port: int, tokens: int) -> None:
    """The fake completions backend (runs in its own process)."""
    from aiohttp import web

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "fake"}]})

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        tag = TAG.findall(body["prompt"])[-1]
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        pieces = [f"{tag} "] + [f"w{i} " for i in range(tokens - 1)]
        for piece in pieces:
            event = {"choices": [{"index": 0, "text": piece, "finish_reason": None}]}
            await resp.write(f"data: {json.dumps(event)}\n\n".encode())
            await asyncio.sleep(0)
        done = {"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]}
        await resp.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
        return resp

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    ap.add_argument("--backend-server", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.backend_server:
        backend_main(args.backend_server, args.tokens)
        return
    bport, gport = _free_port(), _free_port()
    backend_proc = subprocess.Popen(
        [sys.executable, __file__, "--backend-server", str(bport), "--tokens", str(args.tokens)]
    )
    backend = f"http://127.0.0.1:{bport}/v1"
    gateway_proc = None
    try:
        _wait(bport)
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
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait(gport)
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
        f"{args.tokens} events each, one gateway worker (qwen2.5 template)"
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
