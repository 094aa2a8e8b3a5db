"""Tool-call streaming through LMDeploy's and SGLang's own serving code: their parsers vs chatfmt's.

    bash tests/engines/lmdeploy/setup.sh; bash tests/engines/sglang/setup.sh   # once
    python benchmarks/bench_engine_lmdeploy_sglang.py [--sizes 10 100] [--timeout 60]

For each engine venv found under ``.engines/``, one streamed chat request goes through the
engine's real chat handler (LMDeploy's ``/v1/chat/completions`` endpoint, SGLang's
``OpenAIServingChat``; fake engine, no model — see ``tests/engines/*/fake_*.py``): a Qwen3 turn
(reasoning, then one call whose arguments are 10 KB and 100 KB of JSON), one token per engine
step (real Qwen3 tokenizer). It runs once with the engine's own Qwen3 parsers and once with
chatfmt's (``chatfmt-hermes`` + ``chatfmt-qwen3``), each in a fresh process with a time limit.
Printed: the time per request, the cost per token, and the 10 KB → 100 KB growth (10× is
linear). Needs the shared Qwen3 tokenizer (``../shared/tokenizers/qwen3``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINES = {
    "lmdeploy": {"own": ("qwen3", "default"), "label": "LMDeploy 0.18"},
    "sglang": {"own": ("qwen", "qwen3"), "label": "SGLang 0.5.23"},
}
CHATFMT = ("chatfmt-hermes", "chatfmt-qwen3")


def _output(kb: int) -> str:
    line = "The quick brown fox jumps over the lazy dog, then files a report. "
    body = (line * (kb * 1024 // len(line) + 1))[: kb * 1024]
    args = json.dumps({"path": "notes.txt", "content": body})
    return (
        "<think>\nThe user wants the notes written.\n</think>\n\n"
        f'<tool_call>\n{{"name": "write_file", "arguments": {args}}}\n</tool_call>'
    )


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            },
        },
    }
]


def _one(engine: str, tool: str, reasoning: str, kb: int) -> dict[str, float]:
    """In the engine venv: one streamed request; seconds and token count."""
    here = ROOT / "tests" / "engines"
    sys.path[:0] = [str(here), str(here / engine), str(ROOT / "src")]
    from engine_pieces import load_tokenizer, shared_tokenizer_dir, token_pieces

    tokenizer = load_tokenizer("qwen3")
    pieces = token_pieces(_output(kb), tokenizer)
    request = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "Write the notes."}],
        "tools": TOOLS,
        "stream": True,
    }
    if engine == "lmdeploy":
        from fake_lmdeploy import chat_endpoint, run_chat

        from chatfmt.integrations.lmdeploy import register

        register()
        handler, state = chat_endpoint(tool, reasoning, tokenizer)
    else:
        from fake_sglang import fake_model_dir, run_chat, serving_chat  # type: ignore[no-redef]

        from chatfmt.integrations.sglang import register  # type: ignore[no-redef]

        register()
        handler, state = serving_chat(
            fake_model_dir(shared_tokenizer_dir("qwen3")), tokenizer, tool, reasoning
        )
    run_chat(handler, state, token_pieces(_output(1), tokenizer), request)  # warm up
    start = time.perf_counter()
    events = run_chat(handler, state, pieces, request)
    seconds = time.perf_counter() - start
    sent = "".join(
        call.get("function", {}).get("arguments") or ""
        for event in events
        for choice in event.get("choices", ())
        for call in (choice.get("delta") or {}).get("tool_calls") or ()
    )
    if len(sent) < kb * 1024:
        raise SystemExit(f"{engine} {tool}: only {len(sent)} argument characters were streamed")
    return {"seconds": seconds, "tokens": len(pieces)}


def _measure(engine: str, tool: str, reasoning: str, kb: int, timeout: float) -> dict | None:
    python = ROOT / ".engines" / engine / "bin" / "python"
    cmd = [str(python), __file__, "--one", engine, tool, reasoning, str(kb)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode:
        raise SystemExit(f"{engine} {tool} {kb} KB failed:\n{done.stderr[-3000:]}")
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs=2, default=[10, 100], metavar=("SMALL", "LARGE"))
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per request process")
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        engine, tool, reasoning, kb = args.one
        print(json.dumps(_one(engine, tool, reasoning, int(kb))))
        return
    small, large = args.sizes
    print(
        f"{'engine':14} {'parsers':32} {f'{small} KB':>9} {f'{large} KB':>9} "
        f"{'µs/token':>9} {'growth':>7}"
    )
    for engine, spec in ENGINES.items():
        if not (ROOT / ".engines" / engine / "bin" / "python").exists():
            print(f"{spec['label']:14} not set up (bash tests/engines/{engine}/setup.sh)")
            continue
        for name, (tool, reasoning) in (("own", spec["own"]), ("chatfmt", CHATFMT)):
            a = _measure(engine, tool, reasoning, small, args.timeout)
            b = _measure(engine, tool, reasoning, large, args.timeout)
            cell = lambda r: f"{r['seconds']:.2f} s" if r else f"> {args.timeout:.0f} s"  # noqa: E731
            per_token = f"{b['seconds'] / b['tokens'] * 1e6:.0f}" if b else "—"
            growth = f"{b['seconds'] / a['seconds']:.1f}×" if a and b else "—"
            label = f"{tool} + {reasoning}" + (" (own)" if name == "own" else "")
            print(
                f"{spec['label']:14} {label:32} {cell(a):>9} {cell(b):>9} {per_token:>9} {growth:>7}"
            )


if __name__ == "__main__":
    main()
