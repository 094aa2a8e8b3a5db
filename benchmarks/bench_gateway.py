"""The gateway under load: 200 concurrent streaming requests per API, against the backend called directly.

A fake completions backend (its own process on 127.0.0.1) streams ``--tokens`` events per
request and echoes the request's tag (found in the prompt), so a stream that reached the
wrong client is detected. ``chatfmt serve`` (its own process, ``--workers``) sits in front of
it with the ``qwen2.5`` template. The client sends ``--concurrency`` streaming requests
through the gateway — chat completions, Responses and/or Anthropic Messages (``--api``) —
and, in the same run, the same prompts directly to the backend (``/v1/completions``),
rounds interleaved. ``--baseline SRC`` runs a second gateway from another source tree in
the same rounds (before/after on a machine whose load changes). Reported per API: errors,
crossed streams, time to first token and total time (p50, p99), the gateway's added time to
first token (p50, p99), and the CPU time per request served (the scheduler's counts) of the
gateway process (workers included), of the engine and of the client, measured in the same
rounds; "busy" is the share of the machine's cores those three processes took, and
"loop" the share of one core each gateway worker took (its event loop is one thread: near
100 %, or near its share of a machine that other processes load, requests queue for it).

The last lines set the gateway against this machine's floor, measured in the same rounds:
the engine writes each event once and the client reads it once, the gateway reads each
event from the engine and writes it to the client, so its CPU per request is shown as a
multiple of the engine's plus the client's on the direct path ("relay floor"); and its
added time to first token as a multiple of the direct path's.

    python benchmarks/bench_gateway.py [--api chat|responses|messages|all] [--concurrency 200]
        [--tokens 32] [--rounds 3] [--workers 1] [--load burst|steady] [--token-ms 0]
        [--seconds 10] [--baseline ../old/src] [--loop L] [--baseline-loop L]
        [--profile gateway.prof]

``--load burst`` (default) sends all requests at the same moment; ``--load steady`` keeps
``--concurrency`` streams in flight (each client sends its next request when its last one
ended), which with ``--token-ms`` (the engine's time per token) is how a server sees
concurrent users. ``--profile`` runs the gateway under cProfile (read the file with
``python -m pstats``); ``benchmarks/profile_gateway.py`` profiles the gateway's own code
without sockets.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from typing import Any

import aiohttp
from _sse_engine import free_port, start, wait_port

import chatfmt
from chatfmt import fastjson
from chatfmt.backends.sse import SSEDecoder


def _cpu_seconds(pid: int) -> float:
    """CPU seconds of a process's threads and its children (the workers of `--workers`):
    the scheduler's nanosecond count (``schedstat``), else user + system clock ticks."""
    total = 0.0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            break
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as fh:
            total += sum(_cpu_seconds(int(child)) for child in fh.read().split())
    return total


def _chat_text(event: dict[str, Any]) -> str | None:
    for choice in event.get("choices") or ():
        return (choice.get("delta") or {}).get("content")
    return None


def _responses_text(event: dict[str, Any]) -> str | None:
    if event.get("type") in ("error", "response.failed"):
        raise RuntimeError(event)
    return event.get("delta") if event.get("type") == "response.output_text.delta" else None


def _messages_text(event: dict[str, Any]) -> str | None:
    if event.get("type") == "error":
        raise RuntimeError(event)
    delta = event.get("delta") or {}
    return delta.get("text") if delta.get("type") == "text_delta" else None


def _completions_text(event: dict[str, Any]) -> str | None:
    for choice in event.get("choices") or ():
        return choice.get("text")
    return None


#: Per API: the gateway path, the streamed request body for a prompt, and the text of an event.
APIS: dict[str, tuple[str, Any, Any]] = {
    "chat": (
        "/chat/completions",
        lambda say: {
            "model": "qwen2.5",
            "messages": [{"role": "user", "content": say}],
            "stream": True,
            "max_tokens": 256,
        },
        _chat_text,
    ),
    "responses": (
        "/responses",
        lambda say: {"model": "qwen2.5", "input": say, "stream": True, "max_output_tokens": 256},
        _responses_text,
    ),
    "messages": (
        "/messages",
        lambda say: {
            "model": "qwen2.5",
            "messages": [{"role": "user", "content": say}],
            "stream": True,
            "max_tokens": 256,
        },
        _messages_text,
    ),
}


async def _sse_texts(resp: aiohttp.ClientResponse, text_of: Any) -> Any:
    """The texts of a streamed body's events. The body is read in the pieces the network
    delivers and split with chatfmt's SSE decoder (not line by line): the client is a load
    generator sharing the machine's cores with the gateway and the engine, and every event's
    text is still decoded and checked."""
    decoder = SSEDecoder()
    read = resp.content.readany
    while piece := await read():
        for data in decoder.feed(piece):
            if data == b"[DONE]":
                return
            event = fastjson.loads(data)
            if "error" in event and event.get("type") != "error":
                raise RuntimeError(event["error"])
            text = text_of(event)
            if text:
                yield text


async def one(
    session: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    text_of: Any,
    first_cpu: dict[str, Any] | None = None,
) -> tuple[float, float, str]:
    """One streamed request: its time to first text, its total time and its text.

    ``first_cpu`` (one stream at a time, the engine pacing its events): the CPU seconds
    each process in ``first_cpu["pids"]`` spent from before the request to its first
    event (read half an event interval after it, once the processes are idle again),
    added to ``first_cpu["spent"]``."""
    cpu_before = {n: _cpu_seconds(p) for n, p in first_cpu["pids"].items()} if first_cpu else {}
    start = time.perf_counter()
    first = 0.0
    parts: list[str] = []
    async with session.post(url, json=body) as resp:
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {await resp.text()}")
        async for text in _sse_texts(resp, text_of):
            if not first:
                first = time.perf_counter() - start
                if first_cpu:
                    await asyncio.sleep(first_cpu["settle"])
                    for name, pid in first_cpu["pids"].items():
                        first_cpu["spent"][name].append(_cpu_seconds(pid) - cpu_before[name])
            parts.append(text)
        # the rest of the body (its end): the connection is then reused by the client's next
        # request on every path, as the gateway's own client does with the engine's
        await resp.content.read()
    return first, time.perf_counter() - start, "".join(parts)


def _request(
    target: str, prompt_of: Any, api: str | None, tag: str
) -> tuple[str, dict[str, Any], Any]:
    """URL, body and event reader of one tagged request: through a gateway (``api``) or
    directly to the engine (``api`` None)."""
    if api is not None:
        path, body, text_of = APIS[api]
        return target + path, body(f"Say {tag}"), text_of
    body = {"model": "fake", "prompt": prompt_of(tag), "stream": True, "max_tokens": 256}
    return target + "/completions", body, _completions_text


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
    target: str, n: int, prompt_of: Any, api: str | None, first_cpu: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A burst: ``n`` requests sent at the same moment (``first_cpu``: see :func:`one`)."""
    connector = aiohttp.TCPConnector(limit=n)
    async with aiohttp.ClientSession(connector=connector) as session:
        tags = [f"req-{i}" for i in range(n)]
        jobs = [one(session, *_request(target, prompt_of, api, t), first_cpu) for t in tags]
        results = await asyncio.gather(*jobs, return_exceptions=True)
    return {**_outcome(results, tags), "sent": n}


async def steady(
    target: str, n: int, prompt_of: Any, api: str | None, stream_s: float, seconds: float
) -> dict[str, Any]:
    """Steady load: ``n`` streams always in flight for ``seconds``.

    Client ``i`` starts ``i * stream_s / n`` seconds in and sends its next request as soon as
    its last one ended, so arrivals are spread the way ``n`` concurrent users produce them.
    Requests started during the first ``stream_s`` (the ramp), and each client's first
    request (the one that opens its connection), are not counted in the latencies; the CPU
    per request counts every request served.
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
            # a client's first request opens its connection: only later ones are steady load
            counted = k > 0 and time.perf_counter() - t0 >= stream_s
            k += 1
            sent += 1
            try:
                result: Any = await one(session, *_request(target, prompt_of, api, tag))
            except Exception as exc:  # counted as an error below
                result = exc
            if counted:
                tags.append(tag)
                results.append(result)

    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(client(i, session) for i in range(n)))
    return {**_outcome(results, tags), "sent": sent}


def _busy(spent: Counter[str], workers: int) -> str:
    """How much of the machine's CPU the benchmark's own processes (gateway, engine, client)
    took during the rounds, and how much of one core each gateway worker took: near 100 %,
    requests queue for the CPU and the added time to first token measures that queue, not
    the gateway's work."""
    if not spent["wall"]:
        return ""
    machine = f"{_machine_share(spent):5.0%}"
    if "gateway" not in spent:
        return machine
    return f"{machine} {spent['gateway'] / (spent['wall'] * workers):5.0%}"


def _machine_share(spent: Counter[str]) -> float:
    """The share of the machine's cores the benchmark's processes took in ``spent``'s rounds."""
    used = spent["gateway"] + spent["engine"] + spent["client"]
    return used / (spent["wall"] * (os.cpu_count() or 1))


def _per_request(spent: Counter[str], name: str) -> str:
    """``name``'s CPU milliseconds per request served (blank when not measured)."""
    if name not in spent or not spent["requests"]:
        return ""
    return f"{spent[name] / spent['requests'] * 1000:.2f}"


def _floor(
    cpu: dict[tuple[str, str], Counter[str]], stats: dict[tuple[str, str], tuple[float, float]]
) -> None:
    """The gateway against this machine's floor, measured in the same rounds.

    The engine writes each event once and the client reads it once; the gateway does both
    (reads the engine's event, writes the client's), so its CPU per request is set against
    the engine's plus the client's on the direct path ("relay floor"), and its added TTFT
    against the direct path's TTFT. The minimal relays (``--relay``) are one more hop that
    does nothing else: what they add is this machine's price of a hop, and the gateway's
    added TTFT beyond the ``http`` relay's (the same server stack) is chatfmt's own part.
    The issue's absolute targets are checked last."""
    direct = cpu.get(("direct", "completions"))
    if not direct or not direct["requests"]:
        return
    engine = direct["engine"] / direct["requests"] * 1000
    client = direct["client"] / direct["requests"] * 1000
    d50, d99 = stats.get(("direct", "completions"), (0.0, 0.0))
    print(
        f"floor (direct rounds): the engine {engine:.2f} ms and the client {client:.2f} ms of "
        f"CPU per request; relay floor (both) {engine + client:.2f} ms"
    )
    hop: dict[str, float] = {}
    for key, spent in cpu.items():
        if not key[0].startswith("relay") or key not in stats or not spent["requests"]:
            continue
        hop[key[0]] = stats[key][0] - d50
        print(
            f"{key[0]:21} one more hop that only relays bytes: added TTFT p50 "
            f"{hop[key[0]]:.2f} ms, p99 {stats[key][1] - d99:.2f} ms; its CPU per request "
            f"{spent['gateway'] / spent['requests'] * 1000:.2f} ms"
        )
    checks: list[str] = []
    for key, spent in cpu.items():
        if key[0] == "direct" or key[0] in hop or not spent["requests"] or key not in stats:
            continue
        gateway = spent["gateway"] / spent["requests"] * 1000
        added, added99 = stats[key][0] - d50, stats[key][1] - d99
        beyond = (
            f"; {added - hop['relay-http']:.2f} ms beyond the http relay's"
            if "relay-http" in hop
            else ""
        )
        print(
            f"{key[0] + ' ' + key[1]:21} CPU per request {gateway / (engine + client):.2f}× "
            f"the relay floor; added TTFT p50 {added / d50 if d50 else float('nan'):.2f}× "
            f"the direct TTFT p50{beyond}"
        )
        verdicts = [
            ("CPU ≤ 1.5 ms", f"{gateway:.2f}", gateway <= 1.5),
            ("added p50 < 1.5 ms", f"{added:.2f}", added < 1.5),
            ("added p99 < 4 ms", f"{added99:.2f}", added99 < 4.0),
        ]
        checks.append(_verdicts(key, verdicts))
    if checks:
        print("the issue's absolute targets:")
        print("\n".join(checks))


def _verdicts(key: tuple[str, str], checks: list[tuple[str, str, bool]]) -> str:
    """One path's line of targets: each name, the measured value and met / NOT met."""
    return f"{key[0] + ' ' + key[1]:21} " + ", ".join(
        f"{name}: {value} {'met' if ok else 'NOT met'}" for name, value, ok in checks
    )


def _row_order(item: tuple[tuple[str, str], Any]) -> tuple[bool, bool]:
    """Gateways first, then the relays, then the direct path."""
    name = item[0][0]
    return name == "direct", name.startswith("relay")


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


def _start_gateway(
    backend: str, workers: int, src: str | None, profile: str | None, loop: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """``chatfmt serve`` in front of ``backend`` (from the source tree ``src``, default this
    one's), and its base URL once it listens."""
    port = free_port()
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    prof = ["-m", "cProfile", "-o", profile] if profile else []
    proc = subprocess.Popen(
        [
            sys.executable,
            *prof,
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
            str(port),
            "--log-level",
            "warning",
            "--workers",
            str(workers),
            *(["--loop", loop] if loop else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    wait_port(port)
    return proc, f"http://127.0.0.1:{port}/v1"


def _start_relay(mode: str, backend: str) -> tuple[subprocess.Popen[bytes], str]:
    """A minimal relay (``_relay.py``: ``tcp`` or ``http``) in front of ``backend``, and its
    base URL once it listens."""
    port = free_port()
    relay = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_relay.py")
    proc = subprocess.Popen(
        [sys.executable, relay, mode, str(port), backend],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(port)
    return proc, f"http://127.0.0.1:{port}/v1"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1, help="gateway worker processes")
    ap.add_argument(
        "--api",
        choices=(*APIS, "all"),
        default="chat",
        help="the gateway API(s) measured: chat completions, responses, messages, or all",
    )
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
    ap.add_argument(
        "--baseline",
        metavar="SRC",
        help="also measure a gateway run from another source tree (its src directory), "
        "rounds interleaved: before/after figures from one run",
    )
    ap.add_argument("--loop", help="the gateway's event loop (serve --loop): auto, asyncio, uvloop")
    ap.add_argument(
        "--baseline-loop",
        metavar="LOOP",
        help="the baseline gateway's event loop (with --baseline; its tree must take --loop): "
        "e.g. --baseline src --baseline-loop asyncio compares the loops in the same rounds",
    )
    ap.add_argument(
        "--relay",
        default="tcp,http",
        help="minimal relays measured in the same rounds, the floor of one more hop "
        "(benchmarks/_relay.py): tcp (a byte pipe), http (a bare ASGI app on uvicorn with an "
        "aiohttp client: chatfmt serve's stack without chatfmt), both (default) or none",
    )
    ap.add_argument(
        "--profile",
        metavar="PATH",
        help="run the gateway (one worker) under cProfile and write its stats to PATH",
    )
    args = ap.parse_args()
    load_before = f"{os.getloadavg()[0]:.2f}"
    apis = list(APIS) if args.api == "all" else [args.api]
    backend_proc, backend = start(args.tokens, args.token_ms)
    gateways: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    relays: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    tpl = chatfmt.get_template("qwen2.5")

    def prompt_of(tag: str) -> str:
        return tpl.render([{"role": "user", "content": f"Say {tag}"}])

    stream_s = args.tokens * args.token_ms / 1000

    # one paced stream at a time: each process's CPU from the request to its first event
    first_cpus: dict[tuple[str, str], dict[str, list[float]]] = {}
    paced_one = args.load == "burst" and args.concurrency == 1 and args.token_ms > 0

    def load(
        target: str, api: str | None, first_cpu: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if args.load == "burst":
            return asyncio.run(round_(target, args.concurrency, prompt_of, api, first_cpu))
        seconds = args.seconds
        return asyncio.run(
            steady(target, args.concurrency, prompt_of, api, max(stream_s, 0.2), seconds)
        )

    # (name, API) → runs; (process → CPU seconds, requests served) summed over rounds
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    cpu: dict[tuple[str, str], Counter[str]] = {}

    def measured(key: tuple[str, str], target: str, api: str | None, gateway: int | None) -> None:
        """One round of ``key``, with the CPU time the gateway (if any), the engine and this
        client spent on it, per request served (the ramp's and the last ones' included)."""
        procs = {"engine": backend_proc.pid, **({"gateway": gateway} if gateway else {})}
        before = {name: _cpu_seconds(pid) for name, pid in procs.items()}
        first_cpu = None
        if paced_one:
            spent_first = first_cpus.setdefault(key, {name: [] for name in procs})
            first_cpu = {"pids": procs, "settle": args.token_ms / 2000, "spent": spent_first}
        client, wall = time.process_time(), time.perf_counter()
        run = load(target, api, first_cpu)
        spent = cpu.setdefault(key, Counter())
        spent["wall"] += time.perf_counter() - wall
        spent["client"] += time.process_time() - client
        for name, pid in procs.items():
            spent[name] += _cpu_seconds(pid) - before[name]
        spent["requests"] += run["sent"]
        runs.setdefault(key, []).append(run)

    try:
        gateways["gateway"] = _start_gateway(backend, args.workers, None, args.profile, args.loop)
        if args.baseline:
            gateways["baseline"] = _start_gateway(
                backend, args.workers, args.baseline, None, args.baseline_loop
            )
        for mode in filter(None, args.relay.split(",")):
            if mode != "none":
                relays[f"relay-{mode}"] = _start_relay(mode, backend)
        for _proc, url in gateways.values():
            for api in apis:
                asyncio.run(round_(url, 20, prompt_of, api))  # warm up
        for _proc, url in relays.values():
            asyncio.run(round_(url, 20, prompt_of, None))
        asyncio.run(round_(backend, 20, prompt_of, None))
        for _ in range(args.rounds):
            for api in apis:
                for name, (proc, url) in gateways.items():
                    measured((name, api), url, api, proc.pid)
            for name, (proc, url) in relays.items():
                measured((name, "completions"), url, None, proc.pid)
            measured(("direct", "completions"), backend, None, None)
    finally:
        procs = [p for p, _ in (*gateways.values(), *relays.values())] + [backend_proc]
        for proc in procs:
            proc.send_signal(signal.SIGINT)  # uvicorn stops cleanly (and cProfile writes)
            proc.wait(timeout=10)
    mode = (
        f"{args.concurrency} concurrent streaming requests at once"
        if args.load == "burst"
        else f"{args.concurrency} streams always in flight for {args.seconds:g} s"
    )
    print(
        f"{mode} × {args.rounds} rounds, {args.tokens} events each "
        f"{args.token_ms:g} ms apart, {args.workers} gateway worker(s) (qwen2.5 template); "
        f"load average {load_before} before, {os.getloadavg()[0]:.2f} after"
    )
    print(
        f"{'':21} {'errors':>7} {'crossed':>8} {'TTFT p50':>9} {'TTFT p99':>9} "
        f"{'total p50':>10} {'total p99':>10} {'added TTFT p50/p99':>19} "
        f"{'CPU per request: gateway':>24} {'engine':>7} {'client':>7}  (ms) {'busy':>5} {'loop':>5}"
    )
    stats: dict[tuple[str, str], tuple[float, float]] = {}
    for key, rs in sorted(runs.items(), key=_row_order):
        ok = [r for run in rs for r in run["ok"]]
        if not ok:
            print(
                f"{key[0] + ' ' + key[1]:21} all {sum(len(r['errors']) for r in rs)} failed: "
                f"{rs[0]['errors'][0]!r}"[:200]
            )
            continue
        stats[key] = (_pct([r[0] for r in ok], 0.5), _pct([r[0] for r in ok], 0.99))
    direct = stats.get(("direct", "completions"), (0.0, 0.0))
    for key, rs in sorted(runs.items(), key=_row_order):
        if key not in stats:
            continue
        ok = [r for run in rs for r in run["ok"]]
        errors = sum(len(run["errors"]) for run in rs)
        crossed = sum(run["crossed"] for run in rs)
        total = [r[1] for r in ok]
        p50, p99 = stats[key]
        added = "" if key[0] == "direct" else f"{p50 - direct[0]:9.2f} {p99 - direct[1]:9.2f}"
        per_req = [
            f"{_per_request(cpu[key], name):{width}}"
            for name, width in (("gateway", ">24"), ("engine", ">7"), ("client", ">7"))
        ]
        print(
            f"{key[0] + ' ' + key[1]:21} {errors:7d} {crossed:8d} {p50:9.2f} {p99:9.2f} "
            f"{_pct(total, 0.5):10.2f} {_pct(total, 0.99):10.2f} {added:>19} {' '.join(per_req)}"
            f"       {_busy(cpu[key], args.workers)}"
        )
    _floor(cpu, stats)
    _relative_targets(cpu, stats, args)
    _first_cpu(first_cpus)


#: Above this share of the machine's cores taken by the benchmark's processes, the added
#: time to first token at many streams measures the machine's queue, not the gateway.
_SATURATED = 0.6


def _relative_targets(
    cpu: dict[tuple[str, str], Counter[str]],
    stats: dict[tuple[str, str], tuple[float, float]],
    args: argparse.Namespace,
) -> None:
    """The targets of ``docs/performance.md`` (*Where the targets stand*), each relative to
    what the same rounds measured, with met / NOT met: CPU per request ≤ 1.2× the relay
    floor; in a burst, chatfmt's own CPU (the gateway's beyond the http relay's) ≤ 1.5 ms;
    one stream, added TTFT p50 ≤ the http relay's + 1.5 ms; many streams on a machine that
    is not saturated, added TTFT p50 ≤ 1.5× the http relay's."""
    direct, relay = cpu.get(("direct", "completions")), cpu.get(("relay-http", "completions"))
    if not direct or not direct["requests"]:
        return
    floor = (direct["engine"] + direct["client"]) / direct["requests"] * 1000
    d50 = stats.get(("direct", "completions"), (0.0, 0.0))[0]
    relay_cpu = relay["gateway"] / relay["requests"] * 1000 if relay and relay["requests"] else None
    relay_added = stats[("relay-http", "completions")][0] - d50 if relay_cpu is not None else None
    lines: list[str] = []
    for key, spent in cpu.items():
        if key[0] == "direct" or key[0].startswith("relay") or not spent["requests"]:
            continue
        own = spent["gateway"] / spent["requests"] * 1000
        checks = [("CPU ≤ 1.2× the relay floor", f"{own / floor:.2f}×", own <= 1.2 * floor)]
        if relay_cpu is not None and relay_added is not None and key in stats:
            added = stats[key][0] - d50
            if args.load == "burst" and args.concurrency > 1:
                beyond = own - relay_cpu
                checks.append(("own CPU ≤ 1.5 ms", f"{beyond:.2f} ms", beyond <= 1.5))
            elif args.concurrency == 1:
                beyond = added - relay_added
                checks.append(("added ≤ http relay's + 1.5 ms", f"+{beyond:.2f} ms", beyond <= 1.5))
            else:
                machine = _machine_share(spent)
                ratio = added / relay_added if relay_added > 0 else float("inf")
                if machine < _SATURATED:
                    checks.append(("added ≤ 1.5× http relay's", f"{ratio:.2f}×", ratio <= 1.5))
                else:
                    lines.append(
                        f"{key[0] + ' ' + key[1]:21} added TTFT {ratio:.2f}× the http relay's, "
                        f"not checked: the machine {machine:.0%} busy (≥ {_SATURATED:.0%})"
                    )
        lines.append(_verdicts(key, checks))
    if lines:
        print("the relative targets (docs/performance.md):")
        print("\n".join(lines))


def _first_cpu(first_cpus: dict[tuple[str, str], dict[str, list[float]]]) -> None:
    """Per path, the median CPU each process spent from the request to its first event (one
    paced stream at a time): the work on the first token's path, which a loaded machine
    stretches (the wall-clock TTFT) but does not change much."""
    if not first_cpus:
        return
    print("CPU from the request to its first event, median ms (one paced stream at a time):")
    hop = first_cpus.get(("relay-http", "completions"), {}).get("gateway")
    for key, spent in sorted(first_cpus.items(), key=_row_order):
        own = spent.get("gateway")
        line = f"{key[0] + ' ' + key[1]:21} engine {_pct(spent['engine'], 0.5):.2f}"
        if own:
            line += f", {'relay' if key[0].startswith('relay') else 'gateway'} {_pct(own, 0.5):.2f}"
            if hop and not key[0].startswith("relay"):
                line += f" ({_pct(own, 0.5) - _pct(hop, 0.5):.2f} beyond the http relay's)"
        print(line)


if __name__ == "__main__":
    main()
