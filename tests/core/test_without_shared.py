"""The suite without ../shared: outside CI the reference-data tests skip, in CI they fail loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import _support
from _support import ROOT, official_source, require_shared


def _env(absent: Path, *, ci: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["CHATFMT_SHARED"] = str(absent)
    if ci:
        env["CI"] = "true"
    return env


@pytest.mark.slow
def test_collection_skips_instead_of_erroring(tmp_path: Path) -> None:
    """Every test module imports without ../shared; modules that read it at import are skipped."""
    absent = tmp_path / "no-shared"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ROOT,
        env=_env(absent, ci=False),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out  # 2 on a collection error
    assert f"reference data folder not found at {absent}" in out


def test_require_shared_skips_outside_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_support, "SHARED", tmp_path / "absent")
    monkeypatch.delenv("CI", raising=False)
    official_source.cache_clear()
    with pytest.raises(pytest.skip.Exception, match="reference data folder not found") as skip:
        official_source("Qwen-Qwen3-0.6B.jinja")
    assert skip.value.allow_module_level  # also valid at a module's import time


def test_require_shared_fails_in_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_support, "SHARED", tmp_path / "absent")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(RuntimeError, match="required in CI but missing"):
        require_shared()
