"""The official Open Responses compliance tests, unchanged (``../shared/reference/
openresponses-compliance``), against ``chatfmt serve`` in front of a scripted completions
engine.

The engine (``_fake_server.py``) answers each request from its prompt: a ``get_weather``
call in Qwen2.5's hermes format when the prompt offers tools, else a short text. The
TypeScript suite runs with node and the ``tsx``/``zod`` versions upstream pins, installed by
``npm ci --prefix tests/gateway/openresponses`` (the README's test command does it).

Excluded, each for a transport or an endpoint a local engine does not serve:
:data:`EXCLUDED`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

httpx = pytest.importorskip("httpx")

from _fake_server import FakeCompletionsServer, chatfmt_serve, serve  # noqa: E402

from _support import SHARED  # noqa: E402

pytestmark = pytest.mark.slow

SUITE = SHARED / "reference" / "openresponses-compliance"
PACKAGES = Path(__file__).parent / "openresponses"
TSX = PACKAGES / "node_modules" / ".bin" / "tsx"
SETUP = "npm ci --prefix tests/gateway/openresponses"
KEY = "compliance-key"

_WEBSOCKET = "WebSocket mode: chatfmt serves Responses over HTTP (SSE) only"
_COMPACT = "/responses/compact: compaction is an OpenAI endpoint local engines do not serve"
#: The suite's tests that do not apply, and why.
EXCLUDED = {
    "websocket-response": _WEBSOCKET,
    "websocket-sequential-responses": _WEBSOCKET,
    "websocket-continuation": _WEBSOCKET,
    "websocket-reconnect-store-false-recovery": _WEBSOCKET,
    "websocket-previous-response-not-found": _WEBSOCKET,
    "websocket-failed-continuation-evicts-cache": _WEBSOCKET,
    "websocket-compact-new-chain": _WEBSOCKET + "; it also needs " + _COMPACT,
    "compact-response": _COMPACT,
    "compact-missing-model": _COMPACT,
    "image-input": "image input: the model is served as text only (the gateway answers a 400 "
    "naming input[0].content[1])",
}

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "San Francisco, CA"}}\n</tool_call>'


def reply(body: dict[str, Any]) -> str:
    """The scripted engine: a call when tools are offered, else a short answer."""
    return CALL if "<tools>" in body["prompt"] else "Ahoy, hello there, friend!"


def node_missing() -> str | None:
    """Why the suite cannot run here (``None``: it can)."""
    if shutil.which("node") is None:
        return "node is not installed (the Open Responses suite is TypeScript)"
    if not TSX.exists():
        return f"the suite's npm packages are not installed: run {SETUP}"
    if not SUITE.is_dir():
        return f"the Open Responses suite is not at {SUITE}"
    return None


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """``chatfmt serve --backend ENGINE --template qwen2.5`` on a free port (always stopped)."""
    missing = node_missing()
    if missing is not None:
        if os.environ.get("CI") and shutil.which("node") is not None:
            pytest.fail(missing)
        pytest.skip(missing)
    engine = FakeCompletionsServer()
    engine.reply_for = reply
    with (
        serve(engine) as running,
        chatfmt_serve(
            *("--backend", running.base_url, "--template", "qwen2.5", "--model-name", "qwen"),
            *("--api-key", KEY),
        ) as (base, _process),
    ):
        yield base + "/v1"


def run_suite(base_url: str) -> dict[str, Any]:
    """The suite's ``--json`` report (every test, passed, failed or skipped)."""
    command = [str(TSX), str(SUITE / "bin" / "compliance-test.ts")]
    command += ["--base-url", base_url, "--api-key", KEY, "--model", "qwen", "--json"]
    env = {**os.environ, "NODE_PATH": str(PACKAGES / "node_modules")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.strip(), f"the suite printed nothing: {done.stderr[-2000:]}"
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_open_responses_compliance(base_url: str) -> None:
    results = {r["id"]: r for r in run_suite(base_url)["results"]}
    assert set(EXCLUDED) <= set(results), "an excluded test is no longer in the suite"
    failed = {
        test_id: result.get("errors")
        for test_id, result in results.items()
        if test_id not in EXCLUDED and result["status"] != "passed"
    }
    assert not failed, failed
    assert len(results) > len(EXCLUDED)  # some tests ran and passed
