"""``chatfmt encode``: the token-level mask view (terminal colors, plain table, JSON)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import chatfmt
from chatfmt.cli import app

runner = CliRunner()
CONV = [
    {"role": "user", "content": "hi there"},
    {"role": "assistant", "content": "yo\nman"},
]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def qwen(shared_dir: Path) -> str:
    return str(shared_dir / "tokenizers" / "qwen3")


@pytest.fixture
def conv(tmp_path: Path) -> str:
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(CONV), encoding="utf-8")
    return str(path)


def _expected(qwen: str, **kwargs: Any) -> chatfmt.Encoding:
    args = {"add_generation_prompt": False, "train_on": "all_assistant"} | kwargs
    return chatfmt.encode(CONV, "qwen3", qwen, **args)


def _table_rows(output: str) -> list[tuple[int, str, str, str]]:
    """``(id, loss mark, kind, token repr)`` of each row of the plain table."""
    rows = []
    for line in output.splitlines():
        m = re.match(r"\s*(\d+)\s+(\d+)\s+([T.])\s+\d*\s+(control|content)\s+(.*)$", line)
        if m:
            rows.append((int(m[2]), m[3], m[4], m[5]))
    return rows


def test_plain_view_marks_every_token(qwen: str, conv: str) -> None:
    """Not a terminal: a legend and one row per token, trained ones marked T."""
    result = runner.invoke(app, ["encode", conv, "-t", "qwen3", "--tokenizer", qwen])
    assert result.exit_code == 0, result.output
    assert not ANSI.search(result.output)
    assert result.output.startswith("loss: T = trained")
    enc = _expected(qwen)
    rows = _table_rows(result.output)
    assert [r[0] for r in rows] == enc.input_ids
    assert [r[1] == "T" for r in rows] == [label != -100 for label in enc.labels]
    assert [r[2] for r in rows] == enc.token_kinds
    marks = {token: mark for _, mark, _, token in rows}
    assert marks["'hi'"] == "." and marks["'yo'"] == "T" and marks["'<|im_start|>'"] == "."
    assert f"{len(enc)} tokens, {enc.num_trained} trained" in result.output


def test_color_view_styles_tokens(qwen: str, conv: str) -> None:
    result = runner.invoke(app, ["encode", conv, "-t", "qwen3", "--tokenizer", qwen, "--color"])
    assert result.exit_code == 0, result.output
    assert "\x1b[32myo" in result.output  # trained content: green
    assert "\x1b[1;35m<|im_start|>" in result.output  # control, not trained: bold magenta
    assert "\x1b[1;4;32m<|im_end|>" in result.output  # trained control: bold green underline
    plain = ANSI.sub("", result.output)
    assert "hi there" in plain and "trained control" in plain
    off = runner.invoke(app, ["encode", conv, "-t", "qwen3", "--tokenizer", qwen, "--no-color"])
    assert not ANSI.search(off.output) and "loss: T = trained" in off.output


def test_json_gives_ids_labels_and_tokens(qwen: str, conv: str) -> None:
    result = runner.invoke(app, ["encode", conv, "-t", "qwen3", "--tokenizer", qwen, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    enc = _expected(qwen)
    assert data["input_ids"] == enc.input_ids and data["labels"] == enc.labels
    assert [t["text"] for t in data["tokens"]][:3] == ["<|im_start|>", "user", "\n"]
    assert [t["trained"] for t in data["tokens"]] == [label != -100 for label in enc.labels]


def test_generation_prompt_and_train_on(qwen: str, conv: str) -> None:
    """--generation-prompt is an inference prompt: nothing trained unless --train-on says so."""
    base = ["encode", conv, "-t", "qwen3", "--tokenizer", qwen, "--json"]
    data = json.loads(runner.invoke(app, [*base, "--generation-prompt"]).output)
    enc = _expected(qwen, add_generation_prompt=True, train_on="none")
    assert data["input_ids"] == enc.input_ids and set(data["labels"]) == {-100}
    everything = json.loads(runner.invoke(app, [*base, "--train-on", "all"]).output)
    assert everything["labels"] == everything["input_ids"]
    bad = runner.invoke(app, [*base, "--train-on", "bogus"])
    assert bad.exit_code == 2 and "--train-on must be one of" in bad.output


def test_nothing_to_train_says_how_to_see_the_tokens(qwen: str, tmp_path: Path) -> None:
    path = tmp_path / "user.json"
    path.write_text(json.dumps(CONV[:1]), encoding="utf-8")
    result = runner.invoke(app, ["encode", str(path), "-t", "qwen3", "--tokenizer", qwen])
    assert result.exit_code == 2 and "--train-on none" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_dataset_row_is_read_like_tokenize(qwen: str, tmp_path: Path) -> None:
    """--row N shows row N of a dataset, ShareGPT rows included, numbered as tokenize does."""
    sharegpt = {"conversations": [{"from": "human", "value": "hi there"},
                                  {"from": "gpt", "value": "yo\nman"}]}  # fmt: skip
    data = tmp_path / "data.jsonl"
    data.write_text(
        json.dumps({"messages": [{"role": "user", "content": "first"}]})
        + "\n\n"
        + json.dumps(sharegpt)
        + "\n",
        encoding="utf-8",
    )
    args = ["encode", str(data), "--row", "2", "-t", "qwen3", "--tokenizer", qwen, "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["input_ids"] == _expected(qwen).input_ids
    missing = runner.invoke(app, [*args[:3], "7", *args[4:]])
    assert missing.exit_code == 2 and "no row 7" in missing.output
    blank = runner.invoke(app, [*args[:3], "1", *args[4:]])
    assert blank.exit_code == 2 and "no row 1" in blank.output


def test_encode_input_errors_are_one_line(qwen: str, tmp_path: Path) -> None:
    latin = tmp_path / "latin.json"
    latin.write_bytes('[{"role": "user", "content": "café"}]'.encode("latin-1"))
    result = runner.invoke(app, ["encode", str(latin), "-t", "qwen3", "--tokenizer", qwen])
    assert result.exit_code == 2 and "latin.json: not UTF-8 text" in result.output
    assert len(result.output.strip().splitlines()) == 1
    tok = tmp_path / "tokenizer.json"
    tok.write_bytes(b"\xff\xfe")
    conv = tmp_path / "c.json"
    conv.write_text(json.dumps(CONV), encoding="utf-8")
    result = runner.invoke(app, ["encode", str(conv), "-t", "qwen3", "--tokenizer", str(tok)])
    assert result.exit_code == 2 and "tokenizer.json: not UTF-8 text (byte 0xff" in result.output
    result = runner.invoke(app, ["encode", str(conv), "-t", "./nope.jinja", "--tokenizer", qwen])
    assert result.exit_code == 2 and "does not exist" in result.output


#: A parsed Llama 3.1 reply sent back: text beside its call (the official file drops the text).
TEXT_AND_CALL = {
    "messages": [
        {"role": "user", "content": "Weather in Quito?"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Quito"}'},
                }
            ],
        },
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
}


@pytest.mark.slow  # loads Llama 3.1's tokenizer four times
def test_strict_history_refuses_what_the_official_template_drops(
    shared_dir: Path, tmp_path: Path
) -> None:
    """By default the text is written as the model writes it; ``--strict-history`` gives
    the official bytes or an error naming the message (encode) or the rejected row (tokenize)."""
    llama = str(shared_dir / "tokenizers" / "llama3_1")
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(TEXT_AND_CALL), encoding="utf-8")
    base = ["encode", str(conv), "-t", "llama3.1", "--tokenizer", llama, "--json"]
    loose = runner.invoke(app, base)
    assert loose.exit_code == 0, loose.output
    assert "Let me check." in "".join(t["text"] for t in json.loads(loose.output)["tokens"])
    strict = runner.invoke(app, [*base, "--strict-history"])
    assert strict.exit_code != 0 and "messages[1].content" in strict.output
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(TEXT_AND_CALL) + "\n", encoding="utf-8")
    args = ["tokenize", str(data), "-t", "llama3.1", "--tokenizer", llama, "--no-progress"]
    written = runner.invoke(app, [*args, "-o", str(tmp_path / "a")])
    assert written.exit_code == 0, written.output
    rejected = runner.invoke(app, [*args, "-o", str(tmp_path / "b"), "--strict-history"])
    assert rejected.exit_code == 1, rejected.output
    errors = (tmp_path / "b.errors.jsonl").read_text(encoding="utf-8")
    assert "messages[1].content" in errors
