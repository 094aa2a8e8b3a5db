"""``chatfmt parse``: model output → assistant message JSON (whole or as stream deltas)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _streaming import stream_deltas, wire
from chatfmt.cli import app
from chatfmt.parsing import parse

runner = CliRunner()

OUTPUT = (
    "<think>\nThe user wants weather.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    "<|im_end|>\n<|im_start|>user\nhallucinated"
)
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]


def _without_ids(message: dict) -> dict:
    for call in message.get("tool_calls") or ():
        call.pop("id")
    return message


def test_parse_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_text(OUTPUT, encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    result = runner.invoke(app, ["parse", "-t", "qwen3", "--tools", str(tools), str(out)])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["finish_reason"] == "tool_calls"
    assert got["trailing_text"] == "<|im_start|>user\nhallucinated"
    expected = parse(OUTPUT, "qwen3", tools=TOOLS)
    assert _without_ids(got["message"]) == _without_ids(expected.to_openai())
    assert got["message"]["reasoning_content"] == "The user wants weather."


def test_parse_stdin_stream_deltas() -> None:
    result = runner.invoke(
        app, ["parse", "--template", "qwen3", "--stream", "--chunk-size", "3"], input=OUTPUT
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1] == {
        "finish_reason": "tool_calls",
        "trailing_text": "<|im_start|>user\nhallucinated",
    }
    deltas = lines[:-1]
    assert len(deltas) > 3  # streamed in pieces
    chunks = [OUTPUT[i : i + 3] for i in range(0, len(OUTPUT), 3)]
    expected = wire(stream_deltas(chunks, "qwen3", id_factory=lambda i: "id"))
    for delta in deltas:
        for entry in delta.get("tool_calls", ()):
            if "id" in entry:
                entry["id"] = "id"
    assert deltas == expected


def test_parse_truncated_and_options(tmp_path: Path) -> None:
    cut = tmp_path / "cut.txt"
    cut.write_text("An answer that was cut", encoding="utf-8")
    result = runner.invoke(app, ["parse", "-t", "qwen2.5", "--truncated", str(cut)])
    assert json.loads(result.stdout)["finish_reason"] == "length"
    # the template option decides whether the output starts inside <think>
    r1 = runner.invoke(
        app,
        ["parse", "-t", "deepseek-r1-distill-qwen", "--option", "enable_thinking=true", "-"],
        input="r</think>a",
    )
    r2 = runner.invoke(app, ["parse", "-t", "deepseek-r1-distill-qwen", "-"], input="r</think>a")
    assert json.loads(r1.stdout)["message"]["reasoning_content"] == "r"
    assert json.loads(r2.stdout)["message"]["content"] == "r</think>a"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["-t", "no-such-template", "-"], "x", "no chat template matches"),
        (["-t", "qwen3", "/no/such/file.txt"], None, "/no/such/file.txt: no such file"),
        (["-t", "qwen3", "-"], b"\xff\xfe binary", "standard input: not UTF-8 text"),
        (["-t", "qwen3", "--tools", "{tools}", "-"], "x", "expected a JSON list of OpenAI tools"),
        (["-t", "qwen3", "--option", "nope=1", "-"], "x", "unknown parse option(s) nope"),
        (["-t", "qwen3", "--option", "tokenizer=x", "-"], "x", "only available from Python"),
        (["-t", "qwen3", "--option", "novalue", "-"], "x", "expected KEY=VALUE"),
    ],
)
def test_parse_errors_are_one_line(
    tmp_path: Path, args: list[str], stdin: str | bytes | None, message: str
) -> None:
    bad_tools = tmp_path / "tools.json"
    bad_tools.write_text('{"not": "a list"}', encoding="utf-8")
    args = [a.replace("{tools}", str(bad_tools)) for a in args]
    result = runner.invoke(app, ["parse", *args], input=stdin)
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert result.stdout == ""
