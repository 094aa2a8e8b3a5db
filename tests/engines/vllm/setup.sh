#!/usr/bin/env bash
# Create the vLLM test environment: .engines/vllm (a venv, gitignored) with vLLM 0.33.0's
# wheel (no dependencies), CPU torch, only what vLLM's parser modules, its parser tests and
# its chat serving code import, and chatfmt from this tree (../engine_env.sh); plus vLLM's own
# parser tests, taken from its source distribution (downloaded, never built) into
# .engines/vllm-src.
# Reruns are fast: pip's cache and the existing venv are reused.
set -euo pipefail
VLLM_VERSION="${VLLM_VERSION:-0.33.0}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
SRC="$ROOT/.engines/vllm-src"
source "$ROOT/tests/engines/engine_env.sh"

# What vllm.tool_parsers, vllm.reasoning, vllm.entrypoints.openai.chat_completion and the
# tests import: requirements.txt (vLLM's requirements/common.txt pins, trimmed to those).
engine_venv vllm "vllm==$VLLM_VERSION"

if [ ! -d "$SRC/tests/tool_parsers" ]; then
  mkdir -p "$SRC"
  url="$("$ENV/bin/python" - "$VLLM_VERSION" <<'PYEOF'
import json, sys, urllib.request
req = urllib.request.Request("https://pypi.org/simple/vllm/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
files = json.load(urllib.request.urlopen(req, timeout=60))["files"]
print(next(f["url"] for f in files if f["filename"] == f"vllm-{sys.argv[1]}.tar.gz"))
PYEOF
)"
  curl -sSfL "$url" | tar -xz -C "$SRC" --strip-components=1 \
    "vllm-$VLLM_VERSION/tests/tool_parsers" "vllm-$VLLM_VERSION/tests/reasoning" \
    "vllm-$VLLM_VERSION/tests/__init__.py" "vllm-$VLLM_VERSION/tests/parser/__init__.py" \
    "vllm-$VLLM_VERSION/tests/parser/engine/__init__.py" \
    "vllm-$VLLM_VERSION/tests/parser/engine/replay_harness.py" 2>/dev/null || true
  test -d "$SRC/tests/tool_parsers"
fi
# vLLM's tests as their own rootdir (not this project's pytest configuration)
printf '[pytest]\nasyncio_default_fixture_loop_scope = function\n' > "$SRC/pytest.ini"
echo "vLLM $VLLM_VERSION environment ready: $ENV (tests in $SRC/tests)"
