"""Fixtures the gateway tests share: a fake completions engine per module, reset per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from _fake_server import FakeCompletionsServer, serve


@pytest.fixture(scope="module")
def engine() -> Iterator[FakeCompletionsServer]:
    with serve(FakeCompletionsServer()) as server:
        yield server


@pytest.fixture
def fake(engine: FakeCompletionsServer) -> FakeCompletionsServer:
    """The engine, reset for one test."""
    return engine.reset()
