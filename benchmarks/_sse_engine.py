"""A fake completions engine for the benchmarks: SSE streams on 127.0.0.1, run in its own process.

``python benchmarks/_sse_engine.py PORT TOKENS [INTERVAL_MS]`` serves ``/v1/models`` (as
vLLM: ``owned_by`` ``vllm``), vLLM's ``/tokenize`` (one id per word) and a streaming
``/v1/completions`` that sends TOKENS text events, INTERVAL_MS apart (0: as fast as
it can; a real engine sends one per decode step). The first event is the last ``req-N`` tag
found in the prompt (so a client can tell whether it got its own stream), then ``w0 w1 …``;
with ``stream_options.include_usage`` (as vLLM does) a usage chunk comes before ``[DONE]``,
and with ``continuous_usage_stats`` too, every chunk carries the usage so far.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

TAG = re.compile(r"req-\d+")


def serve(port: int, tokens: int, interval: float = 0.0) -> None:
    """Run the engine in this process (blocks)."""
    from aiohttp import web

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "fake", "owned_by": "vllm"}]})

    def words(prompt: object) -> int:
        """The prompt's token count: one token per word."""
        return len(str(prompt).split())

    async def tokenize(request: web.Request) -> web.Response:
        """vLLM's ``/tokenize`` (one id per word): the Messages API counts prompts first."""
        tokens = list(range(words((await request.json()).get("prompt", ""))))
        return web.json_response({"tokens": tokens, "count": len(tokens), "max_model_len": 32768})

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        tags = TAG.findall(str(body.get("prompt", "")))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        pieces = [f"{tags[-1] if tags else 'req-?'} "] + [f"w{i} " for i in range(tokens - 1)]
        options = body.get("stream_options") or {}
        prompt = words(body.get("prompt", ""))
        # as vLLM: usage in every chunk with include_usage and continuous_usage_stats
        continuous = options.get("include_usage") and options.get("continuous_usage_stats")
        for n, piece in enumerate(pieces, 1):
            event: dict[str, object] = {
                "choices": [{"index": 0, "text": piece, "finish_reason": None}]
            }
            if continuous:
                event["usage"] = {
                    "prompt_tokens": prompt,
                    "completion_tokens": n,
                    "total_tokens": prompt + n,
                }
            await resp.write(f"data: {json.dumps(event)}\n\n".encode())
            await asyncio.sleep(interval)
        done = {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
        end = f"data: {json.dumps(done)}\n\n"
        if options.get("include_usage"):  # as vLLM: a usage chunk
            usage = {"prompt_tokens": prompt, "completion_tokens": tokens}
            usage["total_tokens"] = prompt + tokens
            end += f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n"
        await resp.write(f"{end}data: [DONE]\n\n".encode())
        return resp

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/tokenize", tokenize)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def start(tokens: int, interval_ms: float = 0.0) -> tuple[subprocess.Popen[bytes], str]:
    """The engine in a new process, and its base URL (``…/v1``) once it listens."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__)), str(port), str(tokens), str(interval_ms)]
    )
    wait_port(port)
    return proc, f"http://127.0.0.1:{port}/v1"


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000 if sys.argv[3:] else 0.0)
