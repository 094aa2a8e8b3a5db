"""Streaming-parse benchmark: one Hermes tool call with 10 KB and 100 KB arguments, 4-character chunks.

Compares chatfmt's incremental StreamParser with a re-parse-each-chunk baseline
(what several engines do: complete the partial JSON of the accumulated text,
``json.loads`` it, re-serialize the arguments and send the new suffix). Also:
the cost of constructing a ``StreamParser`` for a template (the parsers and the
generation-prompt probe are resolved once per template and options), and the
same stream parsed with the template (its end-of-turn layer in front).

Per format: for every registered template with a tool parser (the first template of
each parser name whose official form renders a call), the call with 10 KB and 100 KB
of arguments is rendered through the template itself and the assistant continuation
(what the turn adds to the generation prompt) is streamed in 4-character chunks
through ``StreamParser(template)``; CPU time at both sizes (median of 5 runs, 3 with
``--quick``) and the growth ratio (linear is ≈ 10x for 10x the data; the target is at
most 12x).

    python benchmarks/bench_parse_stream.py [--quick] [--formats-only]
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
import timeit
from typing import Any

import chatfmt
from chatfmt.parsing import StreamParser, ToolCallDelta, merge_deltas
from chatfmt.parsing import base as parsing_base

CHUNK = 4
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[{}\[\]]')


def payload(size: int) -> str:
    """Model output: one call whose JSON arguments are ``size`` bytes (UTF-8) of text."""
    unit = 'line "quoted" {braces} [x] \\ back </tool_call> é\n'
    body = unit * (size // len(unit) + 1)

    def args_of(m: int) -> str:
        return json.dumps(
            {"path": "/tmp/a.txt", "content": body[:m], "n": [1, 2, 3]}, ensure_ascii=False
        )

    m = size
    while len(args_of(m).encode()) > size:
        m -= max(1, (len(args_of(m).encode()) - size) // 2)
    return '<tool_call>\n{"name": "write_file", "arguments": ' + args_of(m) + "}\n</tool_call>"


def chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def run_chatfmt(parts: list[str], template: Any = None) -> str:
    """Stream like a server: each delta is consumed as it comes (its text sent on), not kept.

    Keeping tens of thousands of deltas alive would measure Python's cyclic garbage
    collector scanning them, not the parser.
    """
    sp = StreamParser(template, parser="hermes")
    sent: list[str] = []
    for p in [*parts, None]:
        for d in sp.feed(p) if p is not None else sp.finish():
            if isinstance(d, ToolCallDelta):
                sent.append(d.text)
    return "".join(sent)


def run_chatfmt_merged(parts: list[str]) -> str:
    """The same stream folded with ``merge_deltas`` (for the correctness check)."""
    sp = StreamParser(parser="hermes")
    deltas = [d for p in parts for d in sp.feed(p)] + sp.finish()
    return merge_deltas(deltas).tool_calls[0].arguments


def complete_partial(text: str) -> str | None:
    """Close an unfinished JSON prefix (open string, arrays, objects); None if not closable."""
    stack: list[str] = []
    in_string = False
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok[0] == '"':
            in_string = (
                len(tok) == 1
                or not tok.endswith('"')
                or (tok.endswith('\\"') and _odd_backslashes(tok))
            )
        elif tok in "{[":
            stack.append("}" if tok == "{" else "]")
        elif stack:
            stack.pop()
    out = text
    if in_string:
        if out.endswith("\\"):
            out = out[:-1]
        out += '"'
    out = out.rstrip().rstrip(",")
    if out.endswith(":"):
        out += " null"
    return out + "".join(reversed(stack))


def _odd_backslashes(tok: str) -> bool:
    n = len(tok) - 1
    k = 0
    while n - 1 - k >= 0 and tok[n - 1 - k] == "\\":
        k += 1
    return k % 2 == 1


def run_baseline(parts: list[str]) -> str:
    """Re-parse the accumulated text on every chunk and diff the re-serialized arguments."""
    acc = ""
    sent = ""
    for p in parts:
        acc += p
        start = acc.find("<tool_call>")
        if start < 0:
            continue
        body = acc[start + len("<tool_call>") :].split("</tool_call>")[0].strip()
        if not body:
            continue
        try:
            obj: Any = json.loads(complete_partial(body) or "")
        except ValueError:
            continue
        if not isinstance(obj, dict) or "arguments" not in obj:
            continue
        args = json.dumps(obj["arguments"], ensure_ascii=False)
        # a partial string must not be sent past its current end: hold the closing part
        stable = args[: len(args) - 4] if not body.endswith("}") else args
        if stable.startswith(sent) and len(stable) > len(sent):
            sent = stable
    return sent


def timed(fn: Any, parts: list[str]) -> float:
    t0 = time.perf_counter()
    fn(parts)
    return (time.perf_counter() - t0) * 1000


def cpu_ms(fn: Any, parts: list[str]) -> float:
    """CPU time of ``fn(parts)`` in this process (steady while other processes load the machine)."""
    t0 = time.process_time()
    fn(parts)
    return (time.process_time() - t0) * 1000


def construction_us(template: Any, cached: bool, number: int) -> float:
    """Median µs to construct ``StreamParser(template)``; uncached = plans forgotten each time."""

    def build() -> None:
        if not cached:
            parsing_base._PLANS.clear()
        StreamParser(template)

    runs = [timeit.timeit(build, number=number) / number * 1e6 for _ in range(5)]
    return statistics.median(runs)


def construction_rows(number: int) -> None:
    tpl = chatfmt.get_template("qwen3")
    print(f"{'StreamParser(...)':<28} {'per-call probe us':>18} {'cached us':>10} {'speed-up':>9}")
    for label, template in (("qwen3 (Template object)", tpl), ("'qwen3' (name)", "qwen3")):
        slow, fast = (
            construction_us(template, False, number),
            construction_us(template, True, number),
        )
        print(f"{label:<28} {slow:>18.1f} {fast:>10.1f} {slow / fast:>8.1f}x")


# ------------------------------------------------------------------ every format
WRITE_FILE = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write a file",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The path"},
                "content": {"type": "string", "description": "The text"},
                "n": {"type": "array", "description": "Numbers", "items": {"type": "integer"}},
            },
            "required": ["path", "content", "n"],
        },
    },
}
_QUESTION = [{"role": "user", "content": "Write the file."}]
#: Text without any family's markup (quotes, braces, a backslash, non-ASCII).
_NEUTRAL = 'line "quoted" {braces} [x] \\ back é\n'


def arguments(size: int) -> dict[str, Any]:
    """Call arguments whose JSON is about ``size`` bytes (UTF-8)."""
    body = _NEUTRAL * (size // len(_NEUTRAL.encode()) + 1)
    args = {"path": "/tmp/a.txt", "content": body, "n": [1, 2, 3]}
    over = len(json.dumps(args, ensure_ascii=False).encode()) - size
    args["content"] = body[: max(0, len(body) - over)]
    return args


def continuation(prompt: str, full: str) -> str:
    """What ``full`` adds to ``prompt`` (from the last shared marker boundary if not a prefix)."""
    common = 0
    for a, b in zip(prompt, full):
        if a != b:
            break
        common += 1
    if common < len(prompt):
        while common and full[common - 1] not in ">]\n ":
            common -= 1
    return full[common:]


def model_output(tpl: Any, args: dict[str, Any]) -> str | None:
    """The template's own rendering of one ``write_file`` call, as the model writes it."""
    call = {
        "id": "call00000",
        "type": "function",
        "function": {"name": "write_file", "arguments": json.dumps(args, ensure_ascii=False)},
    }
    for content in (None, ""):
        try:
            prompt = tpl.render(_QUESTION, tools=[WRITE_FILE], add_generation_prompt=True)
            turn = {"role": "assistant", "content": content, "tool_calls": [call]}
            full = tpl.render([*_QUESTION, turn], tools=[WRITE_FILE], add_generation_prompt=False)
        except chatfmt.ChatFmtError:
            continue
        out = continuation(prompt, full)
        return out if "write_file" in out and "/tmp/a.txt" in out else None
    return None


def stream_template(tpl: Any, parts: list[str]) -> list[tuple[str, str]]:
    """Stream ``parts`` through ``StreamParser(tpl)`` (or a bare parser name); the (name,
    arguments) of the calls. The output is the rendered call itself, so a reasoning block the
    generation prompt opens is not in it."""
    if isinstance(tpl, str):
        sp = StreamParser(parser=tpl, tools=[WRITE_FILE])
    else:
        closed = {"thinking_prefilled": False} if tpl.reasoning_parser else {}
        sp = StreamParser(tpl, tools=[WRITE_FILE], **closed)
    names: dict[int, str] = {}
    args: dict[int, list[str]] = {}
    for p in [*parts, None]:
        for d in sp.feed(p) if p is not None else sp.finish():
            if isinstance(d, ToolCallDelta):
                if d.name is not None:
                    names[d.index] = d.name
                args.setdefault(d.index, []).append(d.text)
    return [(names.get(i, ""), "".join(a)) for i, a in sorted(args.items())]


def _pythonic(args: dict[str, Any]) -> str:
    return "[write_file(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in args.items()) + ")]"


def _json_call(args: dict[str, Any]) -> str:
    return json.dumps({"name": "write_file", "arguments": args}, ensure_ascii=False)


#: Parsers no registered template renders a call for: their output written by hand.
SYNTHETIC: dict[str, Any] = {
    "pythonic": _pythonic,
    "jamba": lambda a: "<tool_calls>[" + _json_call(a) + "]</tool_calls>",
    "phi4": lambda a: "functools[" + _json_call(a) + "]",
}


def format_inputs(sizes: tuple[int, ...]) -> dict[str, tuple[Any, dict[int, list[str]]]]:
    """Per tool parser name: its first template that renders the call, and the chunked outputs
    (a hand-written output through the bare parser for :data:`SYNTHETIC`)."""
    found: dict[str, tuple[Any, dict[int, list[str]]]] = {}
    for name, write in SYNTHETIC.items():
        found[name] = (name, {size: chunks(write(arguments(size))) for size in sizes})
    for tpl in chatfmt.list_templates():
        if not tpl.tool_parser or tpl.tool_parser in found:
            continue
        outputs = {size: model_output(tpl, arguments(size)) for size in sizes}
        if not all(outputs.values()):
            continue
        by_size = {s: chunks(o or "") for s, o in outputs.items()}
        if calls_match(tpl, by_size[sizes[0]], sizes[0]):  # (a turn that drops a prefilled
            found[tpl.tool_parser] = (tpl, by_size)  # <think> is not this parser's case)
    return found


def calls_match(tpl: Any, parts: list[str], size: int) -> bool:
    """Whether streaming ``parts`` gives back the one ``write_file`` call of ``size``."""
    try:
        got = [(n, json.loads(a)) for n, a in stream_template(tpl, parts)]
    except ValueError:
        return False
    return got == [("write_file", arguments(size))]


def format_rows(quick: bool) -> None:
    sizes = (10_000, 100_000)
    inputs = format_inputs(sizes)
    from chatfmt.parsing import TOOL_PARSERS

    missing = sorted(
        {c.name for c in TOOL_PARSERS.values() if c.name not in inputs and ":" not in c.name}
        - {"plain"}
    )
    print(f"\n{'parser':<16} {'template':<26} {'10KB ms':>9} {'100KB ms':>9} {'growth':>7}  check")
    for parser, (tpl, by_size) in sorted(inputs.items()):
        bad = [f"{size // 1000}KB" for size in sizes if not calls_match(tpl, by_size[size], size)]
        check = f"MISMATCH at {', '.join(bad)}" if bad else "ok"
        times: dict[int, list[float]] = {size: [] for size in sizes}
        for _ in range(3 if quick else 5):  # interleaved: both sizes see the same load
            for size in sizes:
                times[size].append(cpu_ms(lambda p, t=tpl: stream_template(t, p), by_size[size]))
        med = {size: statistics.median(times[size]) for size in sizes}
        growth = med[100_000] / med[10_000]
        flag = "" if growth <= 12 else "  (> 12x)"
        label = tpl if isinstance(tpl, str) else tpl.name
        print(
            f"{parser:<16} {label:<26} {med[10_000]:>9.1f} {med[100_000]:>9.1f} "
            f"{growth:>6.1f}x  {check}{flag}"
        )
    if missing:
        print(f"not measured (no rendered call to stream): {', '.join(missing)}")


def main() -> None:
    quick = "--quick" in sys.argv
    if "--formats-only" in sys.argv:
        format_rows(quick)
        return
    construction_rows(200 if quick else 2000)
    sizes = (10_000, 100_000)
    inputs = {size: chunks(payload(size)) for size in sizes}
    for parts in inputs.values():  # correctness first: the arguments are the model's text
        args = run_chatfmt(parts)
        assert args == run_chatfmt_merged(parts)
        assert json.loads(args)["path"] == "/tmp/a.txt" and args in "".join(parts)
    # Interleave the sizes so both see the same machine load; report medians.
    ours: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(3 if quick else 7):
        for size in sizes:
            ours[size].append(timed(run_chatfmt, inputs[size]))
    base = {size: timed(run_baseline, inputs[size]) for size in sizes}
    med = {size: statistics.median(ours[size]) for size in sizes}
    print(f"{'args':>8} {'chunks':>7} {'chatfmt ms':>11} {'re-parse ms':>12} {'speed-up':>9}")
    for size in sizes:
        print(
            f"{size // 1000:>6}KB {len(inputs[size]):>7} {med[size]:>11.1f} {base[size]:>12.1f} {base[size] / med[size]:>8.0f}x"
        )
    print(
        f"growth 10KB -> 100KB: chatfmt {med[100_000] / med[10_000]:.1f}x, "
        f"re-parse {base[100_000] / base[10_000]:.1f}x (input grows {len(inputs[100_000]) / len(inputs[10_000]):.1f}x)"
    )
    big = inputs[100_000]
    with_eot = statistics.median(timed(lambda p: run_chatfmt(p, "qwen2.5"), big) for _ in range(3))
    print(
        f"100KB with template 'qwen2.5' (end-of-turn layer in front): {with_eot:.1f} ms "
        f"({with_eot / med[100_000]:.2f}x the bare parser)"
    )
    format_rows(quick)


if __name__ == "__main__":
    main()
