"""Jinja backend benchmark: chatfmt vs transformers on official templates chatfmt does not recognize.

Plain script; prints a table. Usage::

    python benchmarks/bench_jinja_backend.py [--rounds 7] [--repeat 20] [--only NAME]

Templates: every official chat template in the shared reference data
(``reference/templates/*.jinja``, the GGUF templates of Ollama's library in
``reference/ollama_gguf_chat_templates.json`` and the templates of llama.cpp's chat-template
tests in ``reference/llamacpp_chat_template_cases.json``; one per distinct source) that
``chatfmt`` serves through its Jinja backend: loaded with
:func:`chatfmt.jinja.loaders.from_source`, it is not recognized as a native template (a
plain ``JinjaTemplate``, or a shipped official file registered as a ``PackagedTemplate``,
whose renders also refuse input the file would drop).

Conversations: realistic chats — system, user and assistant turns over several rounds,
and, where the template reads ``tools``, a tool call with its result and tool definitions.
A conversation the template itself refuses in transformers (e.g. a system message it does
not allow) is replaced by the same chat without that feature; both libraries render
exactly the same list. chatfmt's time includes its no-silent-loss checks (a conversation
chatfmt refuses still counts, as a refusal).

Timing: ``chatfmt.render(messages, template, tools=...)`` against transformers'
``apply_chat_template(messages, tools=..., tokenize=False)`` on a
``PreTrainedTokenizerFast`` given the same template and special tokens. The two take
turns per template, ``--rounds`` times in a shuffled order; each time is the best of
those rounds for ``--repeat`` passes over the template's conversations.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CHATFMT_SHARED", ROOT.parent / "shared"))
REFERENCE = SHARED / "reference"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}
CHAT = [
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "The capital of France is Paris."},
    {"role": "user", "content": "And how many people live there?"},
    {"role": "assistant", "content": "About 2.1 million people live in the city of Paris."},
    {"role": "user", "content": "Write a haiku about it, please."},
]
LONG_CHAT = [
    {"role": "user", "content": f"Question {i}: explain step {i} of the plan in a few words."}
    if i % 2 == 0
    else {"role": "assistant", "content": f"Step {i} means checking the data and then moving on."}
    for i in range(12)
] + [{"role": "user", "content": "Summarise the plan."}]
TOOL_CHAT = [
    {"role": "user", "content": "What's the weather in Paris today?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call00001",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call00001", "content": '{"temperature": 21, "sky": "clear"}'},
    {"role": "assistant", "content": "It is 21 °C and clear in Paris."},
    {"role": "user", "content": "Thanks! And tomorrow?"},
]


def conversations(reads_tools: bool) -> list[tuple[list[dict[str, Any]], list[Any] | None]]:
    """The conversations rendered (each with and, where possible, without a system message)."""
    out: list[tuple[list[dict[str, Any]], list[Any] | None]] = [
        ([SYSTEM, *CHAT], None),
        (list(CHAT), None),
        ([SYSTEM, *LONG_CHAT], None),
        (CHAT[:1], None),
    ]
    if reads_tools:
        out += [([SYSTEM, *TOOL_CHAT], [WEATHER]), (TOOL_CHAT[:1], [WEATHER])]
    return out


def official_sources() -> list[tuple[str, str, dict[str, Any]]]:
    """(name, source, special tokens) of every official template in the reference data."""
    found: list[tuple[str, str, dict[str, Any]]] = []
    for path in sorted((REFERENCE / "templates").glob("*.jinja")):
        found.append((path.stem, path.read_text(encoding="utf-8"), {}))
    ollama = REFERENCE / "ollama_gguf_chat_templates.json"
    if ollama.is_file():
        for e in json.loads(ollama.read_text(encoding="utf-8"))["entries"]:
            if isinstance(e.get("gguf"), str):
                found.append((e["model"].removeprefix("library/"), e["gguf"], {}))
    cases = REFERENCE / "llamacpp_chat_template_cases.json"
    if cases.is_file():
        for c in json.loads(cases.read_text(encoding="utf-8"))["cases"]:
            src = c.get("template_source")
            if isinstance(src, str) and ("{%" in src or "{{" in src):
                tokens = {k: c[k] for k in ("bos_token", "eos_token") if c.get(k)}
                found.append((c["name"].split(" (")[0], src, tokens))
    seen: set[str] = set()
    unique = []
    for name, src, tokens in found:
        if src not in seen:
            seen.add(src)
            unique.append((name, src, tokens))
    return unique


def best_time(fn: Callable[[], Any], repeat: int) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default=None, help="only templates whose name contains this")
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT / "src"))
    warnings.simplefilter("ignore")
    from transformers import PreTrainedTokenizerFast

    import chatfmt
    from chatfmt.errors import ChatFmtError
    from chatfmt.jinja import JinjaTemplate
    from chatfmt.jinja.loaders import JinjaSource, from_source

    tokenizer_file = SHARED / "tokenizers" / "qwen3" / "tokenizer.json"
    rows: list[tuple[str, str, int, int, float, float]] = []
    for name, src, tokens in official_sources():
        if args.only and args.only.lower() not in name.lower():
            continue
        try:
            tpl = from_source(JinjaSource(src, tokens, name))
        except ChatFmtError:
            continue
        if not isinstance(tpl, JinjaTemplate):
            continue  # recognized as a native template: not the Jinja backend
        special = {
            k: v for k, v in tpl.variables.items() if k in ("bos_token", "eos_token", "unk_token")
        }
        hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_file), **special)
        hf.chat_template = src

        def hf_render(msgs: Any, tools: Any, hf: Any = hf) -> str:
            return hf.apply_chat_template(msgs, tools=tools, tokenize=False)

        convs = []
        for msgs, tools in conversations("tools" in src):
            try:
                hf_render(msgs, tools)
            except Exception:
                continue  # the template refuses it in transformers too: not a common input
            convs.append((msgs, tools))
        if not convs:
            continue
        refused = 0
        for msgs, tools in convs:
            try:
                chatfmt.render(msgs, tpl, tools=tools)
            except ChatFmtError:
                refused += 1

        def ours(convs: Any = convs, tpl: Any = tpl) -> None:
            for msgs, tools in convs:
                with contextlib.suppress(ChatFmtError):
                    chatfmt.render(msgs, tpl, tools=tools)

        def theirs(convs: Any = convs, hf_render: Any = hf_render) -> None:
            for msgs, tools in convs:
                hf_render(msgs, tools)

        best = {"ours": float("inf"), "theirs": float("inf")}
        order = list(best)
        rng = random.Random(0)
        for _ in range(args.rounds):
            rng.shuffle(order)
            for who in order:
                fn = ours if who == "ours" else theirs
                best[who] = min(best[who], best_time(fn, args.repeat))
        calls = args.repeat * len(convs)
        label = f"{name} ({tpl.name})" if not tpl.name.startswith("jinja-") else name
        rows.append(
            (
                label,
                type(tpl).__name__,
                len(convs),
                refused,
                best["ours"] / calls * 1e6,
                best["theirs"] / calls * 1e6,
            )
        )
        print(
            f"  {label}: chatfmt {rows[-1][4]:.0f} µs, transformers {rows[-1][5]:.0f} µs",
            file=sys.stderr,
        )

    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs; "
        f"{len(rows)} templates served by the Jinja backend; µs per render "
        f"(best of {args.rounds} rounds of {args.repeat} passes)"
    )
    print()
    print(
        "| template | kind | conversations | refused by chatfmt | chatfmt µs | transformers µs | speed-up |"
    )
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for label, kind, n, refused, ours_us, theirs_us in sorted(rows, key=lambda r: r[5] / r[4]):
        ratio = theirs_us / ours_us
        ratios.append(ratio)
        print(
            f"| {label} | {kind} | {n} | {refused} | {ours_us:,.0f} | {theirs_us:,.0f} | {ratio:.2f}× |"
        )
    if ratios:
        print()
        print(
            f"speed-up (transformers time / chatfmt time): min {min(ratios):.2f}×, "
            f"median {statistics.median(ratios):.2f}×, max {max(ratios):.2f}×"
        )


if __name__ == "__main__":
    main()
