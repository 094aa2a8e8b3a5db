#!/usr/bin/env bash
# Create the LMDeploy test environment: .engines/lmdeploy (a venv, gitignored) with LMDeploy's
# wheel (no dependencies), CPU torch, only what its parser modules, parser tests and OpenAI
# serving code import (requirements.txt here), and chatfmt from this tree.
#
# LMDeploy's own parser tests are not on the package index (LMDeploy publishes wheels only, no
# source distribution). They are read from a checkout of LMDeploy at the installed release:
#   LMDEPLOY_SRC=/path/to/lmdeploy bash tests/engines/lmdeploy/setup.sh
# or, where fetching from GitHub is allowed, with --fetch-tests (a shallow clone of the tag).
# Without them run.py still runs chatfmt's adapter and serving-path tests (no gate).
# Reruns are fast: pip's cache and the existing venv are reused.
set -euo pipefail
VERSION="${LMDEPLOY_VERSION:-0.18.0}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
ENV="$ROOT/.engines/lmdeploy"
SRC="$ROOT/.engines/lmdeploy-src"
PY="${PYTHON:-python3.11}"

[ -x "$ENV/bin/python" ] || "$PY" -m venv "$ENV"
PIP=("$ENV/bin/pip" install -q --disable-pip-version-check)
"${PIP[@]}" "torch==2.13.0"
"${PIP[@]}" --no-deps "lmdeploy==$VERSION"
"${PIP[@]}" -r "$ROOT/tests/engines/lmdeploy/requirements.txt"
"${PIP[@]}" --no-deps -e "$ROOT"

TESTS=tests/test_lmdeploy/serve/parsers
if [ "${1:-}" = "--fetch-tests" ] && [ -z "${LMDEPLOY_SRC:-}" ]; then
  LMDEPLOY_SRC="$ENV/lmdeploy-git"
  [ -d "$LMDEPLOY_SRC" ] || git clone -q --depth 1 --branch "v$VERSION" \
    https://github.com/InternLM/lmdeploy "$LMDEPLOY_SRC"
fi
if [ -n "${LMDEPLOY_SRC:-}" ]; then
  rm -rf "$SRC" && mkdir -p "$SRC/$TESTS"
  cp -r "$LMDEPLOY_SRC/$TESTS/." "$SRC/$TESTS/"
fi
echo "LMDeploy $VERSION environment ready: $ENV"
[ -d "$SRC/$TESTS" ] && echo "LMDeploy's parser tests: $SRC/$TESTS" \
  || echo "LMDeploy's parser tests: not set up (LMDEPLOY_SRC or --fetch-tests)"
