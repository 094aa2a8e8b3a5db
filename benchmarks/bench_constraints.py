"""Constraint compile time, first and cached, for 1, 10 and 50 tools, and the grammar libraries
side by side on the same argument schemas in the same run. Compile only: the per-token cost
of constrained decoding is measured by the gateway benchmark.

Columns of the second table (ms, one compile each, fresh schemas so no library cache hits):

* ``llama.cpp``: llama.cpp's JSON-schema → GBNF converter (llama-cpp-python's port), the text
  llama.cpp then parses when it builds its sampler;
* ``llg-check``: llguidance reads that GBNF (``gbnf_to_lark`` + ``validate_grammar``: the check
  chatfmt runs before it returns a grammar);
* ``llg-schema`` / ``llg-token``: llguidance from the JSON schema, without / with a real
  tokenizer (Qwen3, 151k ids; the matcher a decoding engine would build);
* ``xgr-schema`` / ``xgr-token``: xgrammar the same way (``Grammar.from_json_schema`` /
  ``GrammarCompiler.compile_json_schema``), when xgrammar is importable.

Run: ``CHATFMT_SHARED=/work/shared PYTHONPATH=src python benchmarks/bench_constraints.py``
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chatfmt
from chatfmt.constraints import compile_constraint


def tools(n: int, tag: str = "") -> list[dict[str, Any]]:
    """``n`` tools with four typed parameters each (``tag`` makes the schemas new)."""
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{tag}{i}",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": f"city {tag}{i}"},
                        "days": {"type": "integer", "minimum": 1},
                        "unit": {"type": "string", "enum": ["c", "f"]},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["city"],
                },
            },
        }
        for i in range(n)
    ]


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ms(seconds: float | None) -> str:
    return f"{seconds * 1000:10.2f}" if seconds is not None else f"{'n/a':>10}"


def compile_table() -> None:
    hermes = chatfmt.get_template("hermes3")
    compile_constraint(hermes, tools=tools(2, "warm"))  # imports and the template's probes
    print("compile_constraint (hermes3, tool_choice='required'), ms")
    print(f"{'tools':>6} {'first':>10} {'cached':>10}")
    for n in (1, 10, 50):
        offered = tools(n)
        call = functools.partial(compile_constraint, hermes, tools=offered, tool_choice="required")
        first = timed(call)
        cached = min(timed(call) for _ in range(20))
        print(f"{n:>6} {ms(first)} {ms(cached)}")


def _qwen3_tokenizer() -> Any:
    shared = Path(os.environ.get("CHATFMT_SHARED", Path(__file__).parents[1] / "../shared"))
    path = shared / "tokenizers" / "qwen3"
    if not (path / "tokenizer.json").exists():
        return None
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_file=str(path / "tokenizer.json"), eos_token="<|im_end|>"
    )


def library_table() -> None:
    from llama_cpp.llama_grammar import json_schema_to_gbnf
    from llguidance import LLMatcher
    from llguidance.gbnf_to_lark import gbnf_to_lark

    hf = _qwen3_tokenizer()
    llg_tok = xgr_compiler = xgr = None
    if hf is not None:
        from llguidance.hf import from_tokenizer

        llg_tok = from_tokenizer(hf)
    try:
        import xgrammar as xgr

        if hf is not None:
            xgr_compiler = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(hf))
    except ImportError:
        xgr = None

    print("\nargument schemas (anyOf of the tools' parameters) → grammar, ms")
    heads = ("llama.cpp", "llg-check", "llg-schema", "llg-token", "xgr-schema", "xgr-token")
    print(f"{'tools':>6} " + " ".join(f"{h:>10}" for h in heads))
    for n in (1, 10, 50):
        text = json.dumps({"anyOf": [t["function"]["parameters"] for t in tools(n, f"t{n}-")]})
        gbnf = json_schema_to_gbnf(text)
        row = [
            timed(functools.partial(json_schema_to_gbnf, text)),
            timed(
                lambda g=gbnf: LLMatcher.validate_grammar(
                    LLMatcher.grammar_from_lark(gbnf_to_lark(g))
                )
            ),
            timed(lambda t=text: LLMatcher.validate_grammar(LLMatcher.grammar_from_json_schema(t))),
            timed(lambda t=text: LLMatcher(llg_tok, LLMatcher.grammar_from_json_schema(t)))
            if llg_tok is not None
            else None,
            timed(functools.partial(xgr.Grammar.from_json_schema, text)) if xgr else None,
            timed(functools.partial(xgr_compiler.compile_json_schema, text))
            if xgr_compiler is not None
            else None,
        ]
        print(f"{n:>6} " + " ".join(ms(v) for v in row))


def main() -> None:
    compile_table()
    library_table()


if __name__ == "__main__":
    main()
