"""The code interpreter on a real Jupyter kernel (one kernel for the module; started by the tests)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chatfmt.agent.interpreter import CodeInterpreter

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def interp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeInterpreter]:
    with CodeInterpreter(tmp_path_factory.mktemp("kernel"), timeout=3, max_output=300) as ci:
        yield ci


def test_stateful_stdout_results_and_workdir(interp: CodeInterpreter) -> None:
    first = interp.run("x = 21\nprint('hello')")
    assert first.ok and first.stdout == "hello\n" and first.text == "hello"
    second = interp.run("x * 2")
    assert second.results == ["42"] and second.text == "42"
    cwd = interp.run("import os; print(os.getcwd())")
    assert Path(cwd.stdout.strip()) == interp.workdir


def test_errors_and_stderr(interp: CodeInterpreter) -> None:
    res = interp.run("import sys; sys.stderr.write('warn\\n'); 1/0")
    assert not res.ok and res.stderr == "warn\n"
    assert res.error is not None and "ZeroDivisionError" in res.error
    assert "\x1b[" not in res.error  # colour codes removed
    assert res.text.startswith("warn\n") and "ZeroDivisionError" in res.text


def test_long_output_is_cut_with_a_marker(interp: CodeInterpreter) -> None:
    res = interp.run("print('a' * 1000)")
    assert res.text.startswith("a" * 300)
    assert res.text.endswith("[output truncated: 700 more characters]")
    assert res.stdout == "a" * 1000 + "\n"  # the full output stays on the result


def test_png_is_saved_and_referenced(interp: CodeInterpreter) -> None:
    pytest.importorskip("matplotlib")
    res = interp.run("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
    assert len(res.images) == 1
    png = res.images[0]
    assert png.parent == interp.workdir and png.read_bytes().startswith(b"\x89PNG")
    assert f"![image]({png.name})" in res.text


def test_hanging_code_is_interrupted_and_state_survives(interp: CodeInterpreter) -> None:
    interp.run("kept = 'still here'")
    res = interp.run("while True: pass")
    assert res.timed_out and not res.restarted
    assert "timed out after 3 s" in res.text
    assert interp.run("print(kept)").stdout == "still here\n"


def test_dead_kernel_is_restarted_and_the_result_says_so(interp: CodeInterpreter) -> None:
    interp.run("lost = 1")
    died = interp.run("import os; os._exit(1)")
    assert died.restarted and not died.ok
    assert "restarted" in died.text
    after = interp.run("print('lost' in globals())")
    assert after.stdout == "False\n"


def test_resource_limits(tmp_path: Path) -> None:
    with CodeInterpreter(tmp_path, timeout=10, memory_limit_mb=300, cpu_time_limit=1) as ci:
        mem = ci.run("b = bytearray(600 * 1024 * 1024)")
        assert mem.error is not None and "MemoryError" in mem.error
        cpu = ci.run("while True: pass")  # killed by RLIMIT_CPU after ~1 CPU second
        assert cpu.restarted and not cpu.ok
        assert ci.run("print(2 + 2)").stdout == "4\n"


def test_temporary_workdir_is_removed() -> None:
    ci = CodeInterpreter(timeout=5)
    workdir = ci.workdir
    assert ci.run("open('f.txt', 'w').write('x')").ok
    assert (workdir / "f.txt").exists()
    ci.close()
    assert not workdir.exists()
