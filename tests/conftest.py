"""Shared pytest setup: hypothesis profiles and paths to ../shared data."""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from _support import SHARED, require_shared

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder (reference data); skip outside CI when it is absent, fail in CI."""
    return require_shared()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """A test that reads a ../shared file directly (not through ``shared_dir``) while the folder
    is absent is treated like one using the fixture: skipped outside CI, an error in CI."""
    try:
        return (yield)
    except FileNotFoundError as exc:
        missing = exc.filename is not None and Path(exc.filename).is_relative_to(SHARED)
        if missing and not SHARED.is_dir():
            require_shared()
        raise


@pytest.fixture(scope="session")
def qwen3_tokenizer() -> Any:
    """The Qwen3 tokenizer of ../shared, loaded once (see ``shared_dir`` when it is absent)."""
    from chatfmt.tokens import load_tokenizer

    return load_tokenizer(require_shared() / "tokenizers" / "qwen3")
