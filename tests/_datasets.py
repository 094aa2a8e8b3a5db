"""A small chat dataset on disk, and the tokenizer the dataset tests use."""

from __future__ import annotations

import json
from pathlib import Path

from _support import SHARED

#: The Qwen3 tokenizer folder in ../shared.
QWEN = SHARED / "tokenizers" / "qwen3"


def write_dataset(path: Path) -> Path:
    """30 user/assistant rows of growing length and one row without an answer (rejected)."""
    rows = []
    for i in range(30):
        rows.append(
            {
                "messages": [
                    {"role": "user", "content": f"question {i}"},
                    {"role": "assistant", "content": "word " * (i * 3)},
                ]
            }
        )
    rows.append({"messages": [{"role": "user", "content": "no answer"}]})  # rejected
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
