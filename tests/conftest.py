"""Shared pytest setup: hypothesis profiles and paths to ../shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CHATFMT_SHARED", ROOT.parent / "shared"))

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
    """The ../shared folder (reference data); skip outside CI when it is absent."""
    if not SHARED.is_dir():
        if os.environ.get("CI"):
            raise RuntimeError(f"../shared is required in CI but missing at {SHARED}")
        pytest.skip(f"reference data folder not found at {SHARED}")
    return SHARED
