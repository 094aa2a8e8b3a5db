#!/usr/bin/env bash
# Create the SGLang test environment: .engines/sglang (a venv, gitignored) with SGLang's
# wheel (no dependencies), CPU torch, only what its detector modules, detector tests and chat
# serving code import (requirements.txt here), and chatfmt from this tree.
#
# SGLang's own detector tests are not on the package index (SGLang publishes no
# source distribution). They are read from a checkout of SGLang at the installed release:
#   SGLANG_SRC=/path/to/sglang bash tests/engines/sglang/setup.sh
# or, where fetching from GitHub is allowed, with --fetch-tests (a shallow clone of the tag).
# Without them run.py still runs chatfmt's adapter and serving-path tests (no gate).
# Reruns are fast: pip's cache and the existing venv are reused.
set -euo pipefail
VERSION="${SGLANG_VERSION:-0.5.23}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
ENV="$ROOT/.engines/sglang"
SRC="$ROOT/.engines/sglang-src"
PY="${PYTHON:-python3.11}"

[ -x "$ENV/bin/python" ] || "$PY" -m venv "$ENV"
PIP=("$ENV/bin/pip" install -q --disable-pip-version-check)
"${PIP[@]}" "torch==2.13.0"
"${PIP[@]}" --no-deps "sglang==$VERSION"
"${PIP[@]}" -r "$ROOT/tests/engines/sglang/requirements.txt"
# SGLang's serving modules import torchvision; PyPI's wheel is a CUDA build: installed without
# its dependencies, it imports on CPU torch after cpu_torchvision.declare() (kernels unused)
"${PIP[@]}" --no-deps "torchvision==0.28.0"
"${PIP[@]}" --no-deps -e "$ROOT"

TESTS=test/registered/unit/function_call
if [ "${1:-}" = "--fetch-tests" ] && [ -z "${SGLANG_SRC:-}" ]; then
  SGLANG_SRC="$ENV/sglang-git"
  if [ ! -d "$SGLANG_SRC" ]; then  # the repository is large: only the test folder
    git clone -q --depth 1 --filter=blob:none --sparse --branch "v$VERSION" \
      https://github.com/sgl-project/sglang "$SGLANG_SRC"
    git -C "$SGLANG_SRC" sparse-checkout set "$TESTS"
  fi
fi
if [ -n "${SGLANG_SRC:-}" ]; then
  rm -rf "$SRC" && mkdir -p "$SRC/$TESTS"
  cp -r "$SGLANG_SRC/$TESTS/." "$SRC/$TESTS/"
fi
echo "SGLang $VERSION environment ready: $ENV"
[ -d "$SRC/$TESTS" ] && echo "SGLang's parser tests: $SRC/$TESTS" \
  || echo "SGLang's parser tests: not set up (SGLANG_SRC or --fetch-tests)"
