"""``chatfmt render -O key=value``: template options from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chatfmt.cli import app

USER_HI = {"role": "user", "content": "hi"}


# ------------------------------------------------------------------ CLI --option
runner = CliRunner()


def _conv(tmp_path: Path) -> str:
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([USER_HI]), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("key", ["tools", "now", "messages", "sequence_start"])
def test_cli_option_rejects_render_parameters(tmp_path: Path, key: str) -> None:
    result = runner.invoke(app, ["render", "-t", "qwen3", "-O", f"{key}=[]", _conv(tmp_path)])
    assert result.exit_code == 2
    assert "render parameter" in result.output


@pytest.mark.parametrize(("value", "closed"), [("False", True), ("false", True), ("True", False)])
def test_cli_option_python_booleans(tmp_path: Path, value: str, closed: bool) -> None:
    args = ["render", "-t", "qwen3", "-O", f"enable_thinking={value}", _conv(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output.endswith("<think>\n\n</think>\n\n") is closed


def test_cli_option_values() -> None:
    from chatfmt.cli import option_value

    assert option_value("None") is None
    assert option_value('{"a": 1}') == {"a": 1}
    assert option_value("hello world") == "hello world"
    assert option_value('"False"') == "False"
    for bad in ("TRUE", "yes", "[1,", "Null"):
        with pytest.raises(Exception) as err:
            option_value(bad)
        assert type(err.value).__name__ == "Exit"
