"""Model output as an engine streams it: one (text, token ids) piece per token.

Used by the serving-path tests and the engine benchmark (no model: the text is tokenized with
a real tokenizer from the shared folder and each token's text is one engine step).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def shared_tokenizer_dir(name: str) -> Path:
    """``<shared>/tokenizers/<name>`` (``CHATFMT_SHARED`` or the checkout's ``../shared``)."""
    given = os.environ.get("CHATFMT_SHARED")
    bases = [Path(given)] if given else [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    for base in bases:
        if (base / "tokenizers" / name).exists():
            return base / "tokenizers" / name
    return bases[0] / "tokenizers" / name


@cache
def load_tokenizer(name: str = "qwen3") -> Any:
    """The shared Hugging Face tokenizer ``name``, or ``None`` when it is not there (read once)."""
    folder = shared_tokenizer_dir(name)
    if not folder.exists():
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def token_pieces(text: str, tokenizer: Any) -> list[tuple[str, list[int]]]:
    """``text`` as per-token engine steps (ASCII text decodes token by token exactly)."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    tokens = tokenizer.convert_ids_to_tokens(ids)
    pieces = [tokenizer.convert_tokens_to_string([t]) for t in tokens]
    if "".join(pieces) != text:  # a character split across tokens: decode by prefix instead
        pieces, done = [], ""
        for n in range(len(ids)):
            now = tokenizer.decode(ids[: n + 1])
            pieces.append(now[len(done) :])
            done = now
    return [(piece, [i]) for piece, i in zip(pieces, ids)]


def merge_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenAI ``chat.completion.chunk`` events folded into one message (checks call identity).

    Returns ``content``, ``reasoning``, ``calls`` (``[(name, arguments text)]``) and
    ``finish_reason``; a call's name must come once, on its first delta, with its id.
    """
    content = reasoning = ""
    calls: dict[int, list[Any]] = {}
    finish = None
    for event in events:
        for choice in event.get("choices", ()):
            delta = choice.get("delta") or {}
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls") or ():
                function = call.get("function") or {}
                entry = calls.setdefault(call["index"], [None, ""])
                if function.get("name"):
                    assert entry[0] is None and call.get("id"), (
                        "a call's name comes once, with its id"
                    )
                    entry[0] = function["name"]
                else:
                    assert entry[0] is not None, "arguments before the call's name"
                entry[1] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {
        "content": content,
        "reasoning": reasoning,
        "calls": [tuple(calls[i]) for i in sorted(calls)],
        "finish_reason": finish,
    }


#: The serving-path case: a Qwen3 turn with reasoning, content and one call.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
OUTPUT = (
    "<think>\nThe user wants the weather.\n</think>\n\nLet me look. "
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
)


def payload(model: str, stream: bool) -> dict[str, Any]:
    """The chat request of the serving-path case."""
    question = {"role": "user", "content": "Weather in Paris?"}
    return {"model": model, "messages": [question], "tools": TOOLS, "stream": stream}


def check_streamed(events: list[dict[str, Any]]) -> None:
    """The streamed response of the serving-path case is right."""
    import json

    merged = merge_stream(events)
    assert merged["reasoning"].strip() == "The user wants the weather."
    assert merged["content"].strip() == "Let me look."
    assert [(name, json.loads(args)) for name, args in merged["calls"]] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert merged["finish_reason"] == "tool_calls"


def check_whole(body: dict[str, Any]) -> None:
    """The whole response of the serving-path case is right."""
    import json

    choice = body["choices"][0]
    message = choice["message"]
    assert message["reasoning_content"].strip() == "The user wants the weather."
    assert (message["content"] or "").strip() == "Let me look."
    calls = [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in message["tool_calls"]
    ]
    assert calls == [("get_weather", {"city": "Paris"})]
    assert choice["finish_reason"] == "tool_calls"


async def sse_events(body_iterator: Any) -> list[dict[str, Any]]:
    """The JSON events of a streamed response body (``data: …`` lines, without ``[DONE]``)."""
    import json

    events = []
    async for chunk in body_iterator:
        text = chunk if isinstance(chunk, str) else chunk.decode()
        for line in text.splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                events.append(json.loads(line[len("data: ") :]))
    return events


#: The parser pairs (tool, reasoning) of the serving-path tests: chatfmt's named parsers and
#: the template-derived ones; each engine adds its own pair for reference.
CHATFMT_PAIRS = [("chatfmt-hermes", "chatfmt-qwen3"), ("chatfmt", "chatfmt")]


def serve_case(run: Any, model: str, stream: bool) -> Any:
    """The serving-path case through an engine: ``run(tokenizer, pieces, payload)`` sends the
    chat request over a fake engine yielding ``pieces`` and returns the SSE event dicts
    (streamed) or the response dict (whole), which this returns."""
    tokenizer = qwen3_tokenizer_or_skip()
    return run(tokenizer, token_pieces(OUTPUT, tokenizer), payload(model, stream))


def check_serving_case(run: Any, model: str, stream: bool) -> None:
    """:func:`serve_case`, and its chat-completions response is right."""
    (check_streamed if stream else check_whole)(serve_case(run, model, stream))


def qwen3_tokenizer_or_skip() -> Any:
    """The shared Qwen3 tokenizer (the test skips when it is not there)."""
    import pytest

    found = load_tokenizer("qwen3")
    if found is None:
        pytest.skip("no local Qwen3 tokenizer (../shared/tokenizers/qwen3)")
    return found


def launcher_help(code: str, *path: Path) -> str:
    """``--help`` of an engine launcher: run ``python -c code`` with chatfmt and ``path`` on
    ``PYTHONPATH``; its standard output (asserts it exited 0)."""
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in (ROOT / "src", *path)))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
