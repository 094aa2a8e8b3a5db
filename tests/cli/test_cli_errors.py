"""Command-line errors: one clear line (never a traceback), one meaning of ``-o``, convert's refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import chatfmt
from chatfmt.cli import GuardedTyper, app
from chatfmt.data_pipeline.convert import PromptParser, convert_prompt
from chatfmt.errors import ChatFmtError, ParseError, TemplateNotFoundError, UnsupportedFeatureError

runner = CliRunner()
LATIN1 = '{"messages": [{"role": "user", "content": "café"}]}'.encode("latin-1")
BINARY = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256))
CONV = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]


def _one_line_error(result: Any, *needles: str) -> str:
    """The single ``error:`` line of a failed run, checked to name every needle."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return str(lines[0])


# ------------------------------------------------------------------ 1. files that are not text
@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "latin.json").write_bytes(LATIN1)
    (tmp_path / "bin.json").write_bytes(BINARY)
    (tmp_path / "rows.json").write_bytes(b'[{"text": "caf\xe9"}]')
    (tmp_path / "latin.jinja").write_bytes(b"{{ messages[0]['content'] }} caf\xe9")
    (tmp_path / "bin.toml").write_bytes(BINARY)
    (tmp_path / "bin.model").write_bytes(BINARY)
    (tmp_path / "bin.parquet").write_bytes(BINARY)
    (tmp_path / "bin.tiktoken").write_bytes(BINARY)
    (tmp_path / "conv.json").write_text(json.dumps(CONV), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(json.dumps({"messages": CONV}) + "\n", encoding="utf-8")
    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer_config.json").write_bytes(LATIN1)
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "tokenizer.json").write_bytes(LATIN1)
    return tmp_path


#: (arguments with {d} for the files folder, what the error line must name)
NOT_TEXT_CASES = [
    (["render", "-t", "chatml", "{d}/latin.json"], ["latin.json", "not UTF-8 text", "0xe9"]),
    (["render", "-t", "chatml", "{d}/bin.json"], ["bin.json", "not UTF-8 text"]),
    (["render", "-t", "{d}/latin.jinja", "{d}/conv.json"], ["latin.jinja", "not UTF-8 text"]),
    (["render", "-t", "{d}/bin.toml", "{d}/conv.json"], ["bin.toml", "not UTF-8 text"]),
    (["render", "-t", "{d}/model", "{d}/conv.json"], ["tokenizer_config.json", "not UTF-8"]),
    (["show", "{d}/latin.jinja"], ["latin.jinja", "not UTF-8 text"]),
    (["detect", "{d}/latin.jinja"], ["latin.jinja", "not UTF-8 text"]),
    (["detect", "{d}/model"], ["tokenizer_config.json", "not UTF-8 text"]),
    (["convert", "{d}/rows.json", "--from", "chatml", "--to", "zephyr", "-o", "{d}/o.jsonl"],
     ["rows.json", "not UTF-8 text"]),
    (["convert", "{d}/bin.parquet", "--from", "chatml", "--to", "zephyr", "-o", "{d}/o.jsonl"],
     ["bin.parquet", "not a readable Parquet file"]),
    (["tokenize", "{d}/bin.parquet", "-t", "chatml", "--tokenizer", "{q}",
      "-o", "{d}/out"], ["bin.parquet", "not a readable Parquet file"]),
    (["convert", "{d}/data.jsonl", "--from", "{d}/latin.jinja", "--to", "zephyr",
      "-o", "{d}/o.jsonl"], ["latin.jinja", "not UTF-8 text"]),
    (["tokenize", "{d}/data.jsonl", "-t", "{d}/latin.jinja", "--tokenizer", "{d}/tok",
      "-o", "{d}/out"], ["latin.jinja", "not UTF-8 text"]),
    (["tokenize", "{d}/data.jsonl", "-t", "chatml", "--tokenizer", "{d}/tok",
      "-o", "{d}/out"], ["tokenizer.json", "not UTF-8 text", "0xe9"]),
    (["tokenize", "{d}/data.jsonl", "-t", "chatml", "--tokenizer", "{d}/latin.json",
      "-o", "{d}/out"], ["latin.json", "not UTF-8 text"]),
    (["tokenize", "{d}/data.jsonl", "-t", "chatml", "--tokenizer", "{d}/bin.model",
      "-o", "{d}/out"], ["bin.model", "not a SentencePiece model"]),
    (["tokenize", "{d}/data.jsonl", "-t", "chatml", "--tokenizer", "{d}/bin.tiktoken",
      "-o", "{d}/out"], ["bin.tiktoken", "not ASCII text"]),
]  # fmt: skip


@pytest.mark.parametrize(("args", "needles"), NOT_TEXT_CASES)
def test_files_that_are_not_text_give_one_line(
    files: Path, shared_dir: Path, args: list[str], needles: list[str]
) -> None:
    qwen = shared_dir / "tokenizers" / "qwen3"
    result = runner.invoke(app, [a.format(d=files, q=qwen) for a in args])
    _one_line_error(result, *needles)


def test_stdin_that_is_not_text_gives_one_line() -> None:
    result = runner.invoke(app, ["render", "-t", "chatml", "-"], input=LATIN1)
    _one_line_error(result, "<stdin>", f"not UTF-8 text (byte 0xe9 at offset {LATIN1.index(233)})")


def test_directory_and_missing_messages_file(files: Path) -> None:
    _one_line_error(runner.invoke(app, ["render", "-t", "chatml", str(files)]), "is a directory")
    missing = runner.invoke(app, ["render", "-t", "chatml", str(files / "nope.json")])
    _one_line_error(missing, "nope.json", "No such file")


def test_library_names_the_file_too(files: Path) -> None:
    """The API raises chatfmt errors naming the file, not a bare UnicodeDecodeError."""
    with pytest.raises(ChatFmtError, match=r"latin\.jinja: not UTF-8 text \(byte 0xe9"):
        chatfmt.get_template(str(files / "latin.jinja"))
    with pytest.raises(ChatFmtError, match=r"bin\.tiktoken: not ASCII text"):
        chatfmt.load_tokenizer(files / "bin.tiktoken")


# ------------------------------------------------------------------ the safety net
def _app_raising(exc: BaseException) -> typer.Typer:
    demo = GuardedTyper()

    @demo.command()
    def boom() -> None:
        raise exc

    @demo.command()
    def other() -> None:  # two commands, so `boom` is a subcommand as in chatfmt
        pass

    return demo


@pytest.mark.parametrize(
    ("exc", "needle"),
    [
        (ChatFmtError("messages[0].role: bad"), "error: messages[0].role: bad"),
        (FileNotFoundError(2, "No such file or directory", "x.json"), "x.json: No such file"),
        (ValueError("odd value"), "odd value (unexpected ValueError"),
        (b"\xff".decode("utf-8", "replace") and UnicodeDecodeError("utf-8", b"ab\xff", 2, 3, "x"),
         "input: not UTF-8 text (byte 0xff at offset 2)"),
    ],
)  # fmt: skip
def test_safety_net_reports_input_errors_in_one_line(exc: BaseException, needle: str) -> None:
    result = runner.invoke(_app_raising(exc), ["boom"])
    assert needle in _one_line_error(result)


def test_safety_net_keeps_tracebacks_of_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (here a KeyError) is not hidden; CHATFMT_DEBUG=1 re-raises every error."""
    result = runner.invoke(_app_raising(KeyError("oops")), ["boom"])
    assert isinstance(result.exception, KeyError)
    monkeypatch.setenv("CHATFMT_DEBUG", "1")
    result = runner.invoke(_app_raising(ValueError("odd")), ["boom"])
    assert isinstance(result.exception, ValueError)


def test_closed_output_pipe_ends_quietly() -> None:
    """`chatfmt templates | head -1`: the safety net leaves a closed pipe to click (quiet, exit 1)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(chatfmt.__file__).parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "chatfmt.cli", "templates"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command writes: its first write finds no reader
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert stderr == ""


# ------------------------------------------------------------------ 2. one meaning of -o
def test_dash_o_is_output_in_every_command() -> None:
    command = typer.main.get_command(app)
    with_o = []
    for name, sub in command.commands.items():  # type: ignore[attr-defined]
        for param in sub.params:
            if "-o" in param.opts:
                assert "--output" in param.opts, (name, param.opts)
                with_o.append(name)
    assert {"render", "tokenize", "convert"} <= set(with_o)


def test_render_output_file_and_option_spelling(tmp_path: Path) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    out = tmp_path / "prompt.txt"
    args = ["render", "-t", "qwen3", "-O", "enable_thinking=false", "-o", str(out), str(conv)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and result.output == ""
    assert out.read_text(encoding="utf-8") == chatfmt.render(
        [{"role": "user", "content": "hi"}], "qwen3", enable_thinking=False
    )
    old = runner.invoke(app, ["render", "-t", "qwen3", "-o", "enable_thinking=false", str(conv)])
    _one_line_error(old, "-O/--option")
    assert not Path("enable_thinking=false").exists()


# ------------------------------------------------------------------ 3. a missing template file
@pytest.mark.parametrize("query", ["./nope.jinja", "missing.toml", "a/b/c", "x.gguf", "~/n.json"])
def test_missing_template_file_says_so(query: str) -> None:
    with pytest.raises(TemplateNotFoundError, match="does not exist") as err:
        chatfmt.get_template(query)
    assert "no chat template matches" not in str(err.value)
    result = runner.invoke(app, ["render", "-t", query, "-"], input="[]")
    _one_line_error(result, repr(query), "does not exist")


def test_names_and_existing_files_keep_their_messages(tmp_path: Path) -> None:
    with pytest.raises(TemplateNotFoundError, match="no chat template matches 'Org/NoSuchModel'"):
        chatfmt.get_template("Org/NoSuchModel")
    with pytest.raises(TemplateNotFoundError, match=r"Did you mean: .*chatml"):
        chatfmt.get_template("chatmll")
    other = tmp_path / "notes.txt"
    other.write_text("hello", encoding="utf-8")
    with pytest.raises(TemplateNotFoundError, match="is not a chat template file"):
        chatfmt.get_template(str(other))
    with pytest.raises(TemplateNotFoundError, match="directory without a chat template"):
        chatfmt.get_template(str(tmp_path))
    result = runner.invoke(app, ["detect", str(tmp_path / "nope.jinja")])
    _one_line_error(result, "does not exist")


# ------------------------------------------------------------------ 4. convert
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city"}},
                "required": ["city"],
            },
        },
    }
]
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
        }
    ],
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"}
USER = {"role": "user", "content": "Weather in Paris?"}
#: Ordinary text that must still convert: code fences, JSON, markup-like words.
PLAIN = [
    {"role": "user", "content": 'Show ```python\nprint(1)\n``` and {"a": 1} with Args: (str):'},
    {"role": "assistant", "content": "```\ndone\n``` # Tools are <b>nice</b>"},
]


def _tool_templates() -> list[str]:
    names = []
    for tpl in chatfmt.list_templates():
        if not tpl.supports_tools:
            continue
        try:
            PromptParser(tpl)
        except ChatFmtError:
            continue
        names.append(tpl.name)
    return names


@pytest.mark.parametrize("name", _tool_templates())
def test_convert_refuses_tool_use_and_keeps_plain_text(name: str) -> None:
    """A prompt with a tool call, result or tool list is never copied as text into another format."""
    tpl = chatfmt.get_template(name)
    parser = PromptParser(tpl)
    target = chatfmt.get_template("chatml")
    conversations: list[tuple[list[dict[str, Any]], Any]] = [
        ([USER, CALL, RESULT, {"role": "assistant", "content": "Sunny."}], TOOLS),
        ([USER, CALL], TOOLS),
        ([USER], TOOLS),
    ]
    refused = 0
    for messages, tools in conversations:
        try:
            text = tpl.render(messages, tools=tools, add_generation_prompt=False)
        except ChatFmtError:
            continue
        if messages == [USER] and text == tpl.render(messages, add_generation_prompt=False):
            continue  # this template does not write the tool list: nothing to lose
        # refused as tool markup in a message, or as a prompt it cannot read back
        with pytest.raises(
            (UnsupportedFeatureError, ParseError), match=r"tool markup|cannot read a|does not start"
        ) as err:
            convert_prompt(text, parser, target)
        if isinstance(err.value, UnsupportedFeatureError):
            assert err.value.field == "content" and err.value.index is not None
        refused += 1
    assert refused, f"{name}: no tool conversation rendered"
    text = tpl.render(PLAIN, add_generation_prompt=False)
    assert convert_prompt(text, parser, target) == target.render(PLAIN, add_generation_prompt=False)


def _write_prompts(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return path


def test_convert_tool_rows_go_to_the_errors_file_and_nothing_written_fails(tmp_path: Path) -> None:
    tool_prompt = chatfmt.render([USER, CALL], "qwen2.5", add_generation_prompt=False)
    src = _write_prompts(tmp_path / "in.jsonl", [tool_prompt, "garbage"])
    out = tmp_path / "out.jsonl"
    args = ["convert", str(src), "--from", "qwen2.5", "--to", "hermes3", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "no row was converted" in result.output and "Traceback" not in result.output
    assert not out.exists()
    errors = [json.loads(x) for x in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    assert [(e["row"], e["kind"]) for e in errors] == [(0, "tool_use"), (1, "error")]
    assert "messages[1].content" in errors[0]["reason"] and "<tool_call>" in errors[0]["reason"]


def test_convert_without_errors_leaves_no_errors_file(tmp_path: Path) -> None:
    plain = chatfmt.render(CONV, "chatml", add_generation_prompt=False)
    src = _write_prompts(tmp_path / "in.jsonl", [plain])
    out = tmp_path / "out.jsonl"
    stale = tmp_path / "out.errors.jsonl"
    stale.write_text('{"row": 0, "reason": "from an earlier run"}\n', encoding="utf-8")
    args = ["convert", str(src), "--from", "chatml", "--to", "zephyr", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert [json.loads(x)["text"] for x in out.read_text().splitlines()] == [
        chatfmt.render(CONV, "zephyr", add_generation_prompt=False)
    ]
    empty = _write_prompts(tmp_path / "empty.jsonl", [])
    result = runner.invoke(app, ["convert", str(empty), "--from", "chatml", "--to", "zephyr",
                                 "-o", str(tmp_path / "e.jsonl")])  # fmt: skip
    assert result.exit_code == 1 and "no input rows" in result.output
    assert not (tmp_path / "e.jsonl").exists() and not (tmp_path / "e.errors.jsonl").exists()


# ------------------------------------------------------------------ 5. version, ports, Jinja text
def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"chatfmt {version('chatfmt')}"


@pytest.mark.parametrize("command", [["serve", "--template", "qwen3"], ["playground", "--no-open"]])
def test_a_busy_port_is_one_line_before_anything_loads(command: list[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = runner.invoke(app, [*command, "--host", "127.0.0.1", "--port", str(port)])
    _one_line_error(result, f"port {port}", "already in use", "--port")


def test_an_unknown_event_loop_is_one_line_before_anything_loads() -> None:
    result = runner.invoke(app, ["serve", "--template", "qwen3", "--port", "0", "--loop", "tokio"])
    _one_line_error(result, "--loop", "'tokio'")


def test_render_writes_what_the_library_renders_when_segments_are_unavailable(
    tmp_path: Path,
) -> None:
    # a template whose output hides the message text: no segments, but render() works
    (tmp_path / "upper.jinja").write_text("{{ messages[0].content | upper }}")
    (tmp_path / "hi.json").write_text(json.dumps([{"role": "user", "content": "hi!"}]))
    args = ["render", "-t", str(tmp_path / "upper.jinja"), str(tmp_path / "hi.json")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    expected = chatfmt.render([{"role": "user", "content": "hi!"}], str(tmp_path / "upper.jinja"))
    assert result.output == expected == "HI!"
    _one_line_error(runner.invoke(app, [*args, "--json"]), "segments", "without --json")
