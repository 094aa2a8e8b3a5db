"""The peer parser cases: vLLM's and SGLang's parser test expectations, as data.

Read from ``../shared/reference/parser_cases_*.json`` (empty without ../shared); used by
``peers/test_parser_peer_cases.py`` and by the derived-parser cross-check.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from _support import SHARED

CASE_FILES = ("parser_cases_vllm.json", "parser_cases_sglang.json")


_PARSER = {
    "internlm": "internlm2",
    "internlm2": "internlm2",
    "hermes": "hermes",
    "qwen25": "hermes",
    "base": "hermes",
    "llama3": "llama3_json",
    "llama3_json": "llama3_json",
    "mistral": "mistral",
    "glm45": "glm45",
}


def _cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in CASE_FILES:
        path = Path(SHARED) / "reference" / name
        if path.exists():
            out.extend(json.loads(path.read_text(encoding="utf-8")))
    return out


CASES = _cases()


def parser_of(case: dict[str, Any]) -> str:
    head = case["parser"].split(" ")[0]
    return _PARSER.get(head) or _PARSER[head.split("_")[0]]


def tools_of(case: dict[str, Any]) -> list[dict[str, Any]] | None:
    """OpenAI tools from the case's short descriptions like ``"todo_write (todos: array)"``."""
    if "tools" not in case:
        return None
    tools = []
    for desc in case["tools"]:
        m = re.fullmatch(r"(\w+)(?: \((.*)\))?", desc)
        assert m is not None, desc
        props = {}
        for part in (m.group(2) or "").split(","):
            if ":" in part:
                key, typ = (s.strip() for s in part.split(":"))
                props[key] = {"type": typ}
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": m.group(1),
                    "parameters": {"type": "object", "properties": props},
                },
            }
        )
    return tools


def output_of(case: dict[str, Any]) -> str:
    if "delta_text" in case:
        return case["previous_text"] + case["delta_text"]
    return case["model_output"]
