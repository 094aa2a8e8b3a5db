"""The command line (typer app, run in-process)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chatfmt.cli import app

runner = CliRunner()
CONV = {"messages": [{"role": "user", "content": "hi"}]}


def test_help_everywhere() -> None:
    for args in (["--help"], ["templates", "--help"], ["show", "--help"], ["render", "--help"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "Usage" in result.output


def test_templates_table_and_json() -> None:
    result = runner.invoke(app, ["templates"])
    assert result.exit_code == 0 and "chatml" in result.output
    rows = json.loads(runner.invoke(app, ["templates", "--json"]).output)
    assert any(r["name"] == "chatml" for r in rows)


def test_show() -> None:
    result = runner.invoke(app, ["show", "chatml"])
    info = json.loads(result.output)
    assert info["generation_config"]["stop_words"] == ["<|im_end|>"]
    assert "<|im_start|>user\n{user}<|im_end|>" in info["example"]


def test_render_file_stdin_and_segments(tmp_path: Path) -> None:
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(CONV))
    expected = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert runner.invoke(app, ["render", "-t", "chatml", str(path)]).output == expected
    assert (
        runner.invoke(
            app, ["render", "-t", "chatml", "-"], input=json.dumps(CONV["messages"])
        ).output
        == expected
    )
    segs = json.loads(runner.invoke(app, ["render", "-t", "chatml", "--json", str(path)]).output)
    assert "".join(s["text"] for s in segs) == expected
    assert {s["kind"] for s in segs} == {"control", "content"}


def test_render_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [{"role": "robot", "content": "x"}]}')
    result = runner.invoke(app, ["render", "-t", "chatml", str(bad)])
    assert result.exit_code == 2
    assert "messages[0].role" in result.output
    assert "Traceback" not in result.output
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    result = runner.invoke(app, ["render", "-t", "chatml", str(broken)])
    assert result.exit_code == 2 and "invalid JSON" in result.output
    result = runner.invoke(app, ["render", "-t", "no-such-template", str(bad)])
    assert result.exit_code == 2 and "no chat template matches" in result.output


def test_docs_templates_catalogue_is_current() -> None:
    """docs/templates.md embeds `chatfmt templates --markdown`; regenerate it when templates change."""
    from chatfmt.cli import templates_markdown

    doc = (Path(__file__).resolve().parents[2] / "docs" / "templates.md").read_text(
        encoding="utf-8"
    )
    assert templates_markdown() in doc
