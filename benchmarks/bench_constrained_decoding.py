"""Per-token cost of constrained vs unconstrained decoding on the embedded model, in one run.

The same prompt (Qwen2.5's format with two tools, on the embedded SmolLM2-135M) is
completed through :class:`chatfmt.backends.llamacpp.LlamaCppBackend` with no constraint,
with a ``response_format`` JSON schema, with ``tool_choice="required"``, with a named
choice, and with ``tool_choice="auto"`` (a lazy grammar, emulated in process: free text,
then the call under the grammar). Kinds are interleaved round by round, each with the
same seeds. Reported per kind: time to the first token, milliseconds per generated token
after the first (the grammar's cost per step), tokens per reply, and the compile time of
its constraint (first and cached).

    python benchmarks/bench_constrained_decoding.py [--rounds 3] [--max-tokens 64] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import chatfmt
from chatfmt.backends import CompletionRequest
from chatfmt.backends.llamacpp import LlamaCppBackend
from chatfmt.constraints import Constraint, compile_constraint

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "maxLength": 16},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The time in a timezone.",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "PST"]}},
                "required": ["zone"],
            },
        },
    },
]
REPORT = {
    "type": "json_schema",
    "json_schema": {
        "name": "report",
        "schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 16},
                "summary": {"type": "string"},
                "sunny": {"type": "boolean"},
            },
            "required": ["city", "summary", "sunny"],
        },
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris this week? Tell me in detail."}]


def kinds(template: Any) -> dict[str, tuple[Constraint | None, float, float]]:
    """Each kind's constraint with its compile time, first and cached (ms)."""
    named = {"type": "function", "function": {"name": "get_weather"}}
    specs: dict[str, dict[str, Any]] = {
        "none": {},
        "json_schema": {"response_format": REPORT},
        "required": {"tools": TOOLS, "tool_choice": "required"},
        "named": {"tools": TOOLS, "tool_choice": named},
        "auto (lazy)": {"tools": TOOLS, "tool_choice": "auto"},
    }
    out: dict[str, tuple[Constraint | None, float, float]] = {}
    for name, spec in specs.items():
        if not spec:
            out[name] = (None, 0.0, 0.0)
            continue
        start = time.perf_counter()
        constraint = compile_constraint(template, **spec)
        first = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        compile_constraint(template, **spec)
        cached = (time.perf_counter() - start) * 1000
        out[name] = (constraint, first, cached)
    return out


async def one(backend: LlamaCppBackend, request: CompletionRequest) -> tuple[float, float, int]:
    """(time to first token s, seconds per token after the first, tokens) of one reply."""
    start = time.perf_counter()
    first = last = None
    tokens = 0
    async for chunk in backend.stream(request):
        now = time.perf_counter()
        if chunk.text:
            first = now if first is None else first
            last = now
        if chunk.usage is not None and chunk.usage.completion_tokens is not None:
            tokens = chunk.usage.completion_tokens
    assert first is not None and last is not None
    per_token = (last - first) / (tokens - 1) if tokens > 1 else float("nan")
    return first - start, per_token, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    args = parser.parse_args()
    template = chatfmt.get_template("qwen2.5")
    backend = LlamaCppBackend(n_threads=args.threads)
    table = kinds(template)
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in table}

    async def run() -> None:
        for round_ in range(args.rounds + 1):  # round 0 warms the model up, not counted
            for name, (constraint, _first, _cached) in table.items():
                tools = TOOLS if constraint is not None and constraint.json_schema is None else None
                prompt = template.render(ASK, tools=tools) + (
                    constraint.prefill if constraint else ""
                )
                request = CompletionRequest.for_template(
                    template, prompt, max_tokens=args.max_tokens, seed=round_, constraint=constraint
                )
                measured = await one(backend, request)
                if round_:
                    results[name].append(measured)

    asyncio.run(run())
    threads = args.threads or "default"
    print(
        f"SmolLM2-135M Q4 (embedded), {args.rounds} rounds, max_tokens {args.max_tokens}, "
        f"{threads} threads\n"
    )
    print("| constraint | compile first / cached (ms) | first token (ms) | ms per token | tokens |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        _c, first, cached = table[name]
        ttft = statistics.median(r[0] for r in runs) * 1000
        per = statistics.median(r[1] for r in runs) * 1000
        toks = statistics.median(r[2] for r in runs)
        compiled = "–" if name == "none" else f"{first:.1f} / {cached:.3f}"
        print(f"| {name} | {compiled} | {ttft:.0f} | {per:.1f} | {toks:.0f} |")


if __name__ == "__main__":
    main()
