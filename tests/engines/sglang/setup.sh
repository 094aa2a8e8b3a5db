#!/usr/bin/env bash
# Create the SGLang test environment: .engines/sglang (a venv, gitignored) with SGLang's
# wheel (no dependencies), CPU torch, only what its detector modules, detector tests and chat
# serving code import (requirements.txt here), and chatfmt from this tree (../engine_env.sh).
#
# SGLang's own detector and reasoning-parser tests are not on the package index (SGLang
# publishes no source distribution). They are read from a checkout of SGLang at the installed
# release:
#   SGLANG_SRC=/path/to/sglang bash tests/engines/sglang/setup.sh
# or, where fetching from GitHub is allowed, with --fetch-tests (a shallow clone of the tag).
# Without them run.py still runs chatfmt's adapter and serving-path tests (no gate).
# Reruns are fast: pip's cache and the existing venv are reused.
set -euo pipefail
VERSION="${SGLANG_VERSION:-0.5.23}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
FETCH="${1:-}"
source "$ROOT/tests/engines/engine_env.sh"

engine_venv sglang "sglang==$VERSION"
# SGLang's serving modules import torchvision; PyPI's wheel is a CUDA build: installed without
# its dependencies, it imports on CPU torch after cpu_torchvision.declare() (kernels unused)
"${PIP[@]}" --no-deps "torchvision==0.28.0"
echo "SGLang $VERSION environment ready: $ENV"
engine_tests sglang https://github.com/sgl-project/sglang "v$VERSION" \
  test/registered/unit/function_call test/registered/unit/parser
